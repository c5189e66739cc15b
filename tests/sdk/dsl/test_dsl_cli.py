"""``spindle dsl validate|graph|run`` in-process (``spindle.cli.main``): output, errors and exit codes.

(The runs against a control plane are in test_dsl_end_to_end; ``dsl schedule`` in test_dsl_schedule.)
"""

from __future__ import annotations

import textwrap

from collections.abc import Callable
from pathlib import Path

import pytest

from spindle import dsl
from spindle.cli import main

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "reports" / "daily_sales.yaml"

Call = Callable[[list[str]], tuple[int, str, str]]


@pytest.fixture
def call(capsys: pytest.CaptureFixture[str]) -> Call:
    """``spindle ARGV`` in this process: (exit status, stdout, stderr)."""

    def run(argv: list[str]) -> tuple[int, str, str]:
        code = main(argv)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def test_cli_validate_ok_and_errors(tmp_path: Path, call: Call) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(textwrap.dedent(
        """\
        name: w
        steps:
          - {id: a, activity: f, dependson: [x]}
          - {id: b, activity: f, retries: 3}
        """
    ))
    code, out, err = call(["dsl", "validate", str(EXAMPLE), str(bad)])
    assert code == 1
    assert out == f"{EXAMPLE}: ok (daily_sales, 5 steps)\n"
    assert err == (
        f"{bad}:3:26: step 'a': unknown key 'dependson' in a step (did you mean 'depends_on'?)\n"
        f"{bad}:4:26: step 'b': unknown key 'retries' in a step (did you mean 'retry'?)\n"
    )
    assert call(["dsl", "validate", str(EXAMPLE)])[0] == 0


def test_cli_validate_missing_file(tmp_path: Path, call: Call) -> None:
    code, _, err = call(["dsl", "validate", str(tmp_path / "missing.yaml")])
    assert code == 1
    assert "missing.yaml: No such file or directory" in err


def test_cli_validate_needs_a_file(call: Call) -> None:
    code, _, err = call(["dsl", "validate"])
    assert code == 2
    assert "Error: Missing argument 'FILE...'." in err


@pytest.mark.parametrize("fmt", ["text", "dot", "svg"])
def test_cli_graph(fmt: str, tmp_path: Path, call: Call) -> None:
    wf = dsl.load(EXAMPLE)
    code, out, _ = call(["dsl", "graph", str(EXAMPLE), "--format", fmt])
    assert code == 0
    assert out == {"text": wf.to_text, "dot": wf.to_dot, "svg": wf.to_svg}[fmt]()
    target = tmp_path / f"g.{fmt}"
    assert call(["dsl", "graph", str(EXAMPLE), "--format", fmt, "-o", str(target)])[0] == 0
    assert target.read_text() == out


def test_cli_graph_refuses_an_unknown_format(call: Call) -> None:
    code, _, err = call(["dsl", "graph", str(EXAMPLE), "--format", "png"])
    assert code == 2
    assert "Error: Invalid value for '--format': 'png' is not one of 'text', 'dot', 'svg'." in err


def test_cli_run_rejects_bad_inputs_before_connecting(call: Call) -> None:
    code, _, err = call(["dsl", "run", str(EXAMPLE), "--input", '{"date": 5}', "--embedded", "/nonexistent/x.db"])
    assert code == 2
    assert err == f"{EXAMPLE}:14:3: input 'date' must be of type string, got integer 5\n"
    code, _, err = call(["dsl", "run", str(EXAMPLE), "--input", "{nope"])
    assert code == 2
    assert err.startswith("--input is not valid JSON")


def test_cli_run_address_and_embedded_are_exclusive(tmp_path: Path, call: Call) -> None:
    code, _, err = call(["dsl", "run", str(EXAMPLE), "--address", "a:1", "--embedded", str(tmp_path / "x.db")])
    assert code == 2
    assert "Error: --address and --embedded exclude each other" in err
    assert not (tmp_path / "x.db").exists()
