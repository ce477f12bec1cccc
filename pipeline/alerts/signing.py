"""Standard Webhooks signing, by the `standardwebhooks` package (not a signer of our own).

The secret is `whsec_` + base64 of random bytes; each attempt is signed as
`v1,` + base64(HMAC-SHA256(secret, f"{webhook-id}.{webhook-timestamp}.{body}")).
"""

from __future__ import annotations

import base64
import secrets
from datetime import UTC, datetime
from math import floor

from standardwebhooks import Webhook

__all__ = ["SECRET_BYTES", "SECRET_PREFIX", "new_secret", "signed_headers"]

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
"""Standard Webhooks asks for 24 to 64 random bytes."""


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def signed_headers(secret: str, message_id: str, timestamp: datetime, body: str) -> dict[str, str]:
    """The three Standard Webhooks headers for one attempt at `timestamp` (aware, UTC)."""
    at = timestamp.astimezone(UTC)  # the package reads the wall time as UTC
    signature = Webhook(secret).sign(message_id, at, body)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(floor(at.timestamp())),
        "webhook-signature": signature,
    }
