"""The API's read answers as Model Context Protocol tools: `offers`, `quote`, `models`, `history`,
`market`.

A coding agent asks "where should I fine-tune this, and for how much?" through MCP (the official
Python SDK's low-level server). Each tool is one route of the REST API, and nothing else:

- its input schema is that route's own, read from the app's OpenAPI schema (the query
  parameters of a GET, the request body of a POST), so the tools take exactly the parameters
  the API declares, with their descriptions and bounds;
- a call is that request, sent through the whole app (every middleware and exception handler)
  in the same process, or to a running server (`gpuprices mcp --api URL`); its result is the
  API's answer made compact (`api.mcp_answers`: the fields a buyer reads, numbers rounded to what
  they mean, freshness and stale marks kept), or with `full: true` the API's answer as it is;
- each tool's defaults (`limit`, `interval`) are sized for a model's context, stated in its
  description and input schema, and sent to the API unless the agent gives its own;
- a bad argument is the API's 4xx, turned into a tool error carrying the API's `detail` (what
  to fix); the server keeps serving.

`gpuprices mcp` serves them over stdio; `serve` mounts them at `/mcp` (streamable HTTP).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from api.mcp_answers import HISTORY_POINTS, compact
from api.rest.problems import problem_detail

__all__ = [
    "TOOLS",
    "ApiTool",
    "in_process_server",
    "http_sessions",
    "mcp_server",
    "tool_list",
]

SERVER_NAME = "gpuprices"
INSTRUCTIONS = (
    "GPU prices for fine-tuning LLMs: what is on offer now (offers), the cheapest place to run "
    "a fine-tuning job (quote), how prices moved (history), and whether to rent now or wait "
    "(market). Prices are USD; each answer says when it was observed and whether a provider's "
    "data is stale."
)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
OFFERS_LIMIT = 20
HISTORY_INTERVAL = "1d"
COMPACT_NOTE = (
    "Answers are compact: the fields a buyer reads, prices to the cent or 4 significant "
    "digits, percentages to 0.1; `full: true` returns the API's full record."
)
FULL_ARGUMENT = {
    "type": "boolean",
    "default": False,
    "description": "true: the API's full record, unrounded; false: the compact answer",
}


@dataclass(frozen=True, slots=True)
class ApiTool:
    """One MCP tool: the API route it asks and a description an agent can choose by."""

    name: str
    method: str
    path: str
    description: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Arguments sent when the agent gives none: sized for a model's context."""


TOOLS: tuple[ApiTool, ...] = (
    ApiTool(
        "offers",
        "GET",
        "/offers",
        "GPU offers on sale now (or as they stood at `as_of`), cheapest per GPU-hour first: "
        "price per GPU-hour and per instance-hour, on-demand or spot, GPU and form factor, "
        "where it is (country, EEA), whether it is rentable now, and whether its provider's "
        "data is stale. Filter by gpu (A100-80GB, H100:8), provider, pricing, place, node size. "
        f"Defaults: limit {OFFERS_LIMIT} offers. {COMPACT_NOTE}",
        {"limit": OFFERS_LIMIT},
    ),
    ApiTool(
        "quote",
        "POST",
        "/quotes",
        "Where a fine-tuning job runs cheapest now: give a model (or params_b), a method "
        "(full, lora, qlora) and tokens; get the memory it needs, the GPUs, layout, hours and "
        "total cost per offer, ranked, with the reasons offers were skipped. "
        f"Defaults: top 10 quotes. {COMPACT_NOTE}",
    ),
    ApiTool(
        "models",
        "GET",
        "/models",
        "The models a quote knows by name: each with its Hugging Face id, total and active "
        "parameters (B), dense or mixture-of-experts, context length (max_position_embeddings) "
        "and the config.json it comes from. "
        f"{COMPACT_NOTE}",
    ),
    ApiTool(
        "history",
        "GET",
        "/prices/history",
        "How one GPU's price moved: per provider and pricing, min / p25 / median / max per "
        "GPU-hour per bucket (1h, 6h, 1d, 1w) over a time range; gaps where a provider had no "
        "good snapshot, never zeros. "
        f"Defaults: interval {HISTORY_INTERVAL}; compact answers keep the newest "
        f"{HISTORY_POINTS} points of each series (`points_left_off` says how many more "
        f"`full: true` returns). {COMPACT_NOTE}",
        {"interval": HISTORY_INTERVAL},
    ),
    ApiTool(
        "market",
        "GET",
        "/market",
        "Rent now or wait: where one GPU's price index sits now against its last days "
        "(percentiles, availability, volatility, the cheapest hour of day). "
        f"Defaults: the API's own (the last 30 days). {COMPACT_NOTE}",
    ),
)


def tool_list(openapi: Mapping[str, Any]) -> list[types.Tool]:
    """The tools, each with its route's input schema from the app's OpenAPI schema."""
    return [
        types.Tool(
            name=tool.name,
            description=tool.description,
            input_schema=_input_schema(openapi, tool),
            annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
        )
        for tool in TOOLS
    ]


def _input_schema(openapi: Mapping[str, Any], tool: ApiTool) -> dict[str, Any]:
    """The route's parameters (or body), with this tool's defaults and its `full` argument."""
    schema = _route_schema(openapi, tool)
    properties = dict(schema.get("properties", {}))
    for name, value in tool.defaults.items():
        properties[name] = {**properties[name], "default": value}
    properties["full"] = FULL_ARGUMENT
    return {**schema, "properties": properties}


def _route_schema(openapi: Mapping[str, Any], tool: ApiTool) -> dict[str, Any]:
    operation = openapi["paths"][tool.path][tool.method.lower()]
    components = openapi.get("components", {}).get("schemas", {})
    if tool.method == "GET":
        properties: dict[str, Any] = {}
        required = []
        for parameter in operation.get("parameters", []):
            if parameter.get("in") != "query":
                continue
            schema = dict(_inlined(parameter.get("schema", {}), components))
            if parameter.get("description") and "description" not in schema:
                schema["description"] = parameter["description"]
            properties[parameter["name"]] = schema
            if parameter.get("required"):
                required.append(parameter["name"])
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    schema = dict(_inlined(body, components))
    schema.setdefault("type", "object")
    return schema


def _inlined(schema: Any, components: Mapping[str, Any]) -> Any:
    """`schema` with its `$ref`s to `#/components/schemas/...` replaced by their definitions."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            return _inlined(components[ref.rsplit("/", 1)[1]], components)
        return {key: _inlined(value, components) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_inlined(value, components) for value in schema]
    return schema


ClientFactory = Callable[[], httpx.AsyncClient]
"""A client of the API: the app itself in this process, or a server's URL."""


def mcp_server(openapi: Callable[[], Mapping[str, Any]], client: ClientFactory) -> Server[Any]:
    """The MCP server over the API that `client` reaches, whose schema `openapi` returns."""

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list(openapi()))

    def input_schema(name: str) -> Mapping[str, Any] | None:
        tool = _by_name(name)
        return None if tool is None else _input_schema(openapi(), tool)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = _by_name(params.name)
        if tool is None:
            known = ", ".join(t.name for t in TOOLS)
            return _error(f"Unknown tool {params.name!r}; the tools are {known}")
        arguments = {**tool.defaults, **(params.arguments or {})}
        full = arguments.pop("full", False)
        if not isinstance(full, bool):
            return _error(f"full must be true or false, not {full!r}")
        try:
            async with client() as api:
                if tool.method == "GET":
                    response = await api.get(tool.path, params=_query(arguments))
                else:
                    response = await api.request(tool.method, tool.path, json=arguments)
        except httpx.HTTPError as exc:
            return _error(f"the gpuprices API could not be reached: {exc or type(exc).__name__}")
        if response.status_code >= 400:
            return _error(_problem(response))
        if full:
            return types.CallToolResult(
                content=[types.TextContent(text=response.text)],
                structured_content=response.json(),
            )
        answer = compact(tool.name, response.json())
        text = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
        return types.CallToolResult(
            content=[types.TextContent(text=text)], structured_content=answer
        )

    return Server(
        SERVER_NAME,
        instructions=INSTRUCTIONS,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def http_sessions(server: Server[Any], host: str) -> StreamableHTTPSessionManager:
    """The streamable HTTP transport's manager for `server`, stateless (its `asgi_app`
    answers `/mcp`; its `run()` must be entered first). On a loopback address, Host and Origin are
    checked against loopback names (DNS rebinding), as the SDK does. Without an API key, the
    app's `api.rest.ambient` check also stands in front of `/mcp`, whatever the address."""
    security = None
    if host in LOOPBACK_HOSTS:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    # Stateless: every tool is a read, so nothing needs a session. Each request gets a transport
    # of its own that ends with it: no session table for clients to fill (10,000 `initialize`
    # calls once held 385 MB and locked every new client out with 503s for 30 minutes), nothing
    # to expire, nothing to close one by one at shutdown.
    # The transport logs "Terminating session: None" at INFO for every stateless request: the
    # access log already has one line per request.
    logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
    return StreamableHTTPSessionManager(app=server, security_settings=security, stateless=True)


def _by_name(name: str) -> ApiTool | None:
    return next((tool for tool in TOOLS if tool.name == name), None)


def _query(arguments: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """Tool arguments as query parameters: lists repeated, booleans as the API reads them."""
    pairs: list[tuple[str, str]] = []
    for name, value in arguments.items():
        for item in value if isinstance(value, list) else [value]:
            if item is None:
                continue
            text = json.dumps(item) if isinstance(item, bool | dict) else str(item)
            pairs.append((name, text))
    return tuple(pairs)


def _problem(response: httpx.Response) -> str:
    return problem_detail(response) or f"HTTP {response.status_code}: {response.text[:200]}"


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def in_process_server(app: Any) -> Server[Any]:
    """The MCP server over `app` (a FastAPI app) itself: each tool call asks `app` in this
    process, through its whole middleware stack."""

    def client() -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1", timeout=None
        )

    return mcp_server(app.openapi, client)
