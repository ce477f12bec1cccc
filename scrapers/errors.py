"""Errors raised by the provider scrapers.

ProviderError                  every scraper failure; the run is recorded as failed
├── ProviderHTTPError          the provider answered with an error status, or not at all
├── ProviderPayloadError       the body is not what the parser understands (not JSON, key missing)
│   └── AnswerTooLargeError    an answer is longer than its byte limit
├── ProviderURLError           a URL the collector refuses (not https on the provider's hosts)
├── MissingCredentialsError    the provider needs a key that is not set
└── FetchCancelledError        the fetch was given up because the process is stopping
"""

from __future__ import annotations

__all__ = [
    "AnswerTooLargeError",
    "FetchCancelledError",
    "MissingCredentialsError",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderPayloadError",
    "ProviderURLError",
]


class ProviderError(Exception):
    """A provider could not be collected; the message says what to fix."""


class ProviderHTTPError(ProviderError):
    """The provider answered with an HTTP error, timed out, or could not be reached."""


class ProviderPayloadError(ProviderError):
    """The provider's body cannot be parsed as a whole (not JSON, expected key missing)."""


class AnswerTooLargeError(ProviderPayloadError):
    """An answer was longer than its byte limit; the run fails, nothing is read past it."""


class ProviderURLError(ProviderError):
    """A URL (a request, a next-page link, a redirect) outside the provider's own https hosts."""


class MissingCredentialsError(ProviderError):
    """The provider needs an API key that is not set in the environment."""


class FetchCancelledError(ProviderError):
    """The fetch was cancelled (during a retry wait) because the process is shutting down."""
