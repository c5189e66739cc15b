"""The operation token of a workflow-run Nexus operation: which workflow in which namespace.

Temporal's shape: base64url (no padding) of the JSON ``{"v": 0, "t": 1, "ns": namespace, "wid": workflow_id}``
(``t`` 1 = workflow run). The server stores it opaquely and hands it back in a cancel task.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json

_WORKFLOW_RUN_TYPE = 1


@dataclasses.dataclass(frozen=True)
class WorkflowRunOperationToken:
    """The workflow a workflow-run operation started."""

    namespace: str
    workflow_id: str

    def encode(self) -> str:
        """The token string a start handler answers with."""
        raw = json.dumps(
            {"v": 0, "t": _WORKFLOW_RUN_TYPE, "ns": self.namespace, "wid": self.workflow_id},
            separators=(",", ":"),
        ).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str) -> WorkflowRunOperationToken:
        """Parse ``token``; raises ``ValueError`` naming what is wrong for a token this SDK did not make."""
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            doc = json.loads(raw)
        except (binascii.Error, ValueError, UnicodeDecodeError) as err:
            raise ValueError(f"operation token is not base64url JSON: {token!r}") from err
        if not isinstance(doc, dict):
            raise ValueError(f"operation token is not a JSON object: {token!r}")
        if doc.get("t") != _WORKFLOW_RUN_TYPE:
            raise ValueError(f"operation token type {doc.get('t')!r} is not a workflow run (1)")
        namespace, workflow_id = doc.get("ns"), doc.get("wid")
        if not isinstance(workflow_id, str) or not workflow_id:
            raise ValueError("operation token has no workflow id ('wid')")
        if not isinstance(namespace, str):
            raise ValueError("operation token namespace ('ns') is not a string")
        return cls(namespace=namespace, workflow_id=workflow_id)
