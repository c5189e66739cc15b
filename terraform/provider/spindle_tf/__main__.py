"""Entry point: ``python -m spindle_tf`` serves the provider over Terraform's plugin protocol (v6)."""

from __future__ import annotations


def main() -> None:
    """Run the provider; Terraform starts this through the launcher script."""
    from tf.runner import run_provider

    from .provider import SpindleProvider

    run_provider(SpindleProvider())


if __name__ == "__main__":
    main()
