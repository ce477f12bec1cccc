"""Errors raised by alert rules and their delivery (all are `PipelineError`s).

AlertError                   every alert failure
├── InvalidAlertError        a rule that cannot be built (names the field to fix)
├── AlertNotFoundError       no alert with that id
├── TooManyAlertsError       the rule limit is reached (GPUPRICES_MAX_ALERT_RULES)
└── TargetError              a webhook target that cannot be used
    ├── UnsafeTargetError    not https, or private/loopback/link-local/metadata (refused)
    └── UnresolvableTargetError  the host name does not resolve (may be temporary)
"""

from __future__ import annotations

from pipeline.errors import PipelineError

__all__ = [
    "AlertError",
    "AlertNotFoundError",
    "InvalidAlertError",
    "TargetError",
    "TooManyAlertsError",
    "UnresolvableTargetError",
    "UnsafeTargetError",
]


class AlertError(PipelineError):
    """An alert could not be created, found or sent; the message says what to fix."""


class InvalidAlertError(AlertError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


SHOWN_ID_CHARS = 64
"""Characters of an unknown alert id repeated in the message (ids are 28)."""


class AlertNotFoundError(AlertError):
    def __init__(self, rule_id: str) -> None:
        shown = rule_id[:SHOWN_ID_CHARS] + ("…" if len(rule_id) > SHOWN_ID_CHARS else "")
        super().__init__(f"No alert '{shown}'; list them with `gpuprices alerts list`")
        self.rule_id = rule_id


class TooManyAlertsError(AlertError):
    def __init__(self, limit: int) -> None:
        super().__init__(
            f"At most {limit} alert rules are kept: delete one (`gpuprices alerts rm ID`, "
            "DELETE /alerts/{id}) or raise GPUPRICES_MAX_ALERT_RULES"
        )
        self.limit = limit


class TargetError(AlertError):
    """The webhook URL cannot be used as a target."""


class UnsafeTargetError(TargetError):
    """Refused by the target rules (scheme, private or metadata address)."""


class UnresolvableTargetError(TargetError):
    """The target's host name did not resolve."""
