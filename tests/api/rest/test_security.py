"""Security headers on every HTML answer; redirects that never repeat the request's Host."""

from __future__ import annotations

import re

import pytest


def policy(response) -> dict[str, str]:
    text = response.headers["content-security-policy"]
    return {d.split()[0]: d.partition(" ")[2] for d in (p.strip() for p in text.split(";")) if d}


def test_the_page_carries_a_policy_that_fits_its_own_files(client):
    response = client.get("/")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    rules = policy(response)
    assert rules["script-src"] == "'self'" and rules["style-src"] == "'self'"
    assert rules["frame-ancestors"] == "'none'" and response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    html = response.text  # what the policy allows is all the page needs: no inline code
    assert not re.search(r"<script(?![^>]*\bsrc=)", html) and "<style" not in html
    assert not re.search(r"\sstyle=|\son[a-z]+=", html)


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_the_api_docs_allow_their_inline_start_script_and_nothing_from_elsewhere(client, path):
    response = client.get(path)
    rules = policy(response)
    assert "'unsafe-inline'" in rules["script-src"] and "http" not in rules["script-src"]
    assert rules["frame-ancestors"] == "'none'"


def test_every_answer_says_nosniff_and_only_html_gets_the_policy(client):
    response = client.get("/export/offers.csv")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" not in response.headers


def test_a_trailing_slash_redirect_is_relative_whatever_the_host(client):
    response = client.get("/gpus/", headers={"Host": "evil.example"}, follow_redirects=False)
    assert response.status_code in (307, 308)
    assert response.headers["location"] == "/gpus"
