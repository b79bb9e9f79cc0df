"""web_fetch never reaches this machine or its networks unless the user's own config names the
host: every spelling of loopback, names that resolve to private addresses, redirects into
them, and the metadata services. A recorder listening on loopback (127.0.0.1, 127.0.0.2 and ::1
on one port) shows that nothing arrives; a resolver the rules carry shows that the connection
goes to the address that was checked, and a test CA that https still verifies the host's name."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from dcode.agent.approval import ApprovalPolicy
from dcode.agent.backends import LocalBackend
from dcode.agent.events import ApprovalKind
from dcode.agent.tools.web_client import FetchRules, Refused, Unreachable, fetch
from dcode.agent.tools.web_fetch import make_web_fetch_tool, rules_of
from dcode.settings.config import ApprovalMode
from dcode.settings.web_address import IPAddress
from tests.support.model_server import ScriptedModelServer
from tests.support.web_hosts import Authority, Recorder, allow_private, user_fetch_config

ALLOWED_ONLY_BY_CONFIG = "Private addresses are fetched only from hosts the user names in [fetch] allow_private in their own config"


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    with Recorder() as running:
        yield running


def tool(tmp_path: Path, mode: ApprovalMode = ApprovalMode.ALL, **policy: object) -> BaseTool:
    return make_web_fetch_tool(
        tmp_path / "results", policy=ApprovalPolicy(mode, LocalBackend(tmp_path), **policy)
    )  # type: ignore[arg-type]


async def call(web_fetch: BaseTool, url: str) -> ToolMessage:
    message = await web_fetch.ainvoke(
        {"type": "tool_call", "name": web_fetch.name, "id": "call_1", "args": {"url": url}}
    )
    assert isinstance(message, ToolMessage)
    return message


class Resolver:
    """A resolver the rules carry: ``answers`` by host, each lookup counted; a host it does not
    know is not found."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.asked.append(host)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [ipaddress.ip_address(a) for a in self.answers[host]]


SPELLINGS = [
    ("127.0.0.1", "127.0.0.1", "loopback"),
    ("2130706433", "127.0.0.1", "loopback"),
    ("0x7f000001", "127.0.0.1", "loopback"),
    ("127.1", "127.0.0.1", "loopback"),
    ("0177.0.0.1", "127.0.0.1", "loopback"),
    ("0", "0.0.0.0", "unspecified"),
    ("[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "loopback"),
    ("[::1]", "[::1]", "loopback"),
    ("localhost", "localhost", "loopback"),
    ("LOCALHOST.", "localhost", "loopback"),
    ("127.0.0.2", "127.0.0.2", "loopback"),
]


@pytest.mark.parametrize(("spelling", "canonical", "kind"), SPELLINGS)
async def test_no_spelling_of_loopback_is_fetched_even_with_approve_all(
    tmp_path: Path, recorder: Recorder, spelling: str, canonical: str, kind: str
) -> None:
    url = f"http://{spelling}:{recorder.port}/spelling"
    result = await call(tool(tmp_path), url)
    assert result.status == "error"
    host = canonical.strip("[]")
    assert result.content == (
        f"web_fetch: http://{canonical}:{recorder.port}/spelling is not fetched: {host} is a {kind} address. "
        f'{ALLOWED_ONLY_BY_CONFIG} (allow_private = ["{canonical}:{recorder.port}"])'
    )
    assert recorder.hits == []


@pytest.mark.parametrize(
    ("url", "said"),
    [
        (
            "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
            "169.254.169.254 is a cloud metadata address",
        ),
        (
            "http://metadata.google.internal/computeMetadata/v1/",
            "metadata.google.internal is a cloud metadata address",
        ),
        ("http://[fd00:ec2::254]/latest/", "fd00:ec2::254 is a cloud metadata address"),
        ("http://10.1.2.3/admin", "10.1.2.3 is a private address"),
        ("http://192.168.1.1/", "192.168.1.1 is a private address"),
        ("http://100.64.0.1/", "100.64.0.1 is a shared (carrier-grade NAT) address"),
        ("http://[fe80::1]/", "fe80::1 is a link-local address"),
        ("http://[fc00::1]/", "fc00::1 is a unique-local address"),
        (
            "http://[64:ff9b::a9fe:a9fe]/",
            "64:ff9b::a9fe:a9fe is a cloud metadata address",
        ),  # NAT64 of 169.254.169.254
        ("http://[2002:a00:1::]/", "2002:a00:1:: is a private address"),  # 6to4 of 10.0.0.1
        ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
        ("http://255.255.255.255/", "255.255.255.255 is a reserved address"),
    ],
)
async def test_private_networks_and_metadata_are_refused_before_any_lookup(
    tmp_path: Path, url: str, said: str
) -> None:
    resolver = Resolver({})
    with pytest.raises(Refused) as refused:
        await fetch(url, rules=FetchRules(resolve=resolver))
    assert f"is not fetched: {said}. {ALLOWED_ONLY_BY_CONFIG}" in str(refused.value)
    assert resolver.asked == []


async def test_a_name_that_resolves_to_a_private_address_is_refused(recorder: Recorder) -> None:
    resolver = Resolver(
        {"intranet.test": ["127.0.0.2"], "mixed.test": ["93.184.215.14", "127.0.0.1"]}
    )
    rules = FetchRules(resolve=resolver)
    with pytest.raises(Refused) as refused:
        await fetch(f"http://intranet.test:{recorder.port}/", rules=rules)
    assert str(refused.value).startswith(
        f"http://intranet.test:{recorder.port}/ is not fetched: intranet.test resolves to 127.0.0.2, a loopback address."
    )
    with pytest.raises(
        Refused, match=r"mixed\.test resolves to 127\.0\.0\.1, a loopback address"
    ):  # every address is checked
        await fetch(f"http://mixed.test:{recorder.port}/", rules=rules)
    assert recorder.hits == []


async def test_the_connection_goes_to_the_address_that_was_checked(recorder: Recorder) -> None:
    # DNS rebinding: if the client looked the name up again to connect, "localhost" would lead
    # to 127.0.0.1 (the system's answer), not to the 127.0.0.2 that was checked and allowed.
    resolver = Resolver({"localhost": ["127.0.0.2"], "rebind.test": ["127.0.0.2"]})
    rules = FetchRules(
        private_hosts=(f"localhost:{recorder.port}", "rebind.test"), resolve=resolver
    )
    page = await fetch(f"http://localhost:{recorder.port}/pinned", rules=rules)
    assert (page.status, page.body) == (200, b"recorded")
    # A name the system cannot resolve at all is reached only through the checked address.
    named = await fetch(f"http://REBIND.test.:{recorder.port}/named", rules=rules)
    assert named.url == f"http://rebind.test:{recorder.port}/named" and named.status == 200
    assert [(hit.address, hit.path, hit.headers["host"]) for hit in recorder.hits] == [
        ("127.0.0.2", "/pinned", f"localhost:{recorder.port}"),
        ("127.0.0.2", "/named", f"rebind.test:{recorder.port}"),
    ]
    assert resolver.asked == ["localhost", "rebind.test"]  # one lookup each


async def test_an_allowed_private_host_is_fetched_on_its_port_only(
    tmp_path: Path, recorder: Recorder, home: Path
) -> None:
    hosts = allow_private(home, f"127.0.0.1:{recorder.port}", "[::1]")
    web_fetch = tool(tmp_path, fetch_private=hosts)
    assert (await call(web_fetch, f"http://127.0.0.1:{recorder.port}/mine")).status == "success"
    assert (await call(web_fetch, f"http://[::1]:{recorder.port}/six")).status == "success"
    other = await call(
        web_fetch, f"http://127.0.0.2:{recorder.port}/other"
    )  # another host: not named
    assert other.status == "error" and "127.0.0.2 is a loopback address" in str(other.content)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        elsewhere = probe.getsockname()[1]
    port = await call(web_fetch, f"http://127.0.0.1:{elsewhere}/")  # the entry names one port
    assert port.status == "error" and "127.0.0.1 is a loopback address" in str(port.content)
    assert [(hit.address, hit.path) for hit in recorder.hits] == [
        ("127.0.0.1", "/mine"),
        ("::1", "/six"),
    ]


async def test_https_to_a_pinned_address_still_verifies_the_hosts_certificate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    authority = Authority.create(tmp_path)
    monkeypatch.setenv(
        "SSL_CERT_FILE", str(authority.ca_file)
    )  # the client trusts this test's CA only
    resolver = Resolver({"docs.pinned.test": ["127.0.0.1"], "impostor.test": ["127.0.0.1"]})
    rules = FetchRules(private_hosts=("docs.pinned.test", "impostor.test"), resolve=resolver)
    with Recorder(("127.0.0.1",), tls=authority.server_context("docs.pinned.test")) as server:
        page = await fetch(f"https://docs.pinned.test:{server.port}/tls", rules=rules)
        assert (page.status, page.body) == (200, b"recorded")
        [hit] = server.hits
        assert (hit.server_name, hit.headers["host"], hit.path) == (
            "docs.pinned.test",
            f"docs.pinned.test:{server.port}",
            "/tls",
        )
        # The same address under a name the certificate does not carry: verification fails.
        with pytest.raises(Unreachable, match="certificate verify failed"):
            await fetch(f"https://impostor.test:{server.port}/tls", rules=rules)
        assert len(server.hits) == 1


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{port}/stolen",
        "http://2130706433:{port}/stolen",
        "http://[::1]:{port}/stolen",
        "http://localhost:{port}/stolen",
        "http://127.0.0.2:{port}/stolen",
    ],
)
async def test_a_redirect_from_an_allowed_host_into_loopback_is_refused(
    tmp_path: Path, server: ScriptedModelServer, recorder: Recorder, home: Path, target: str
) -> None:
    hosts = allow_private(home, f"127.0.0.1:{server.port}")
    server.redirects["/leak"] = target.format(port=recorder.port)
    result = await call(tool(tmp_path, fetch_private=hosts), f"{server.url}/leak")
    assert result.status == "error"
    assert str(result.content).startswith(f"web_fetch: {server.url}/leak redirected to http://")
    assert "is not fetched" in str(result.content) and ALLOWED_ONLY_BY_CONFIG in str(result.content)
    assert recorder.hits == []


async def test_each_hop_is_looked_up_and_checked_again(
    server: ScriptedModelServer, recorder: Recorder
) -> None:
    resolver = Resolver({"intranet.test": ["127.0.0.2"]})
    server.redirects["/hop"] = f"http://intranet.test:{recorder.port}/inside"
    rules = FetchRules(
        private_hosts=(f"127.0.0.1:{server.port}",), unasked=lambda _: True, resolve=resolver
    )
    with pytest.raises(Refused) as refused:
        await fetch(f"{server.url}/hop", rules=rules)
    assert str(refused.value).startswith(
        f"{server.url}/hop redirected to http://intranet.test:{recorder.port}/inside is not fetched: "
        "intranet.test resolves to 127.0.0.2, a loopback address."
    )
    assert resolver.asked == ["intranet.test"] and recorder.hits == []


async def test_a_redirect_to_another_host_needs_approval_and_is_not_followed(
    tmp_path: Path, server: ScriptedModelServer, home: Path
) -> None:
    config = user_fetch_config(
        home,
        allow_private=(f"127.0.0.1:{server.port}", f"localhost:{server.port}"),
        allow=("127.0.0.1",),
    )
    hosts, allow = config.fetch_private, config.fetch_allow
    server.redirects["/go"] = f"http://LOCALHOST:{server.port}/landing"
    server.redirects["/here"] = "/landing"
    server.pages["/landing"] = (200, "text/plain", b"landed")
    edits = tool(tmp_path, ApprovalMode.EDITS, fetch_allow=allow, fetch_private=hosts)
    result = await call(edits, f"{server.url}/go")
    assert result.status == "error"
    assert result.content == (
        f"web_fetch: {server.url}/go redirected to http://localhost:{server.port}/landing, on another host, which needs "
        "the user's approval: not followed. To read it, fetch that URL (the user is asked first)"
    )
    assert not [r for r in server.all_requests if r.path == "/landing"]
    same = await call(edits, f"{server.url}/here")  # the host the call was approved for
    assert same.status == "success" and str(same.content).endswith("landed")
    allowed = ApprovalPolicy(
        ApprovalMode.EDITS,
        LocalBackend(tmp_path),
        {ApprovalKind.FETCH},
        fetch_allow=allow,
        fetch_private=hosts,
    )
    followed = await call(
        make_web_fetch_tool(tmp_path, policy=allowed), f"{server.url}/go"
    )  # "allow web fetches" said yes to all
    assert followed.status == "success" and str(followed.content).endswith("landed")


async def test_outside_a_run_no_private_host_is_allowed(
    server: ScriptedModelServer, tmp_path: Path
) -> None:
    assert rules_of(None).private_hosts == ()
    result = await call(
        make_web_fetch_tool(tmp_path), f"{server.url}/anything"
    )  # no policy given, no run to ask
    assert result.status == "error" and "127.0.0.1 is a loopback address" in str(result.content)
    assert not [r for r in server.all_requests if r.path == "/anything"]


async def test_a_proxy_from_the_environment_gets_names_but_never_private_hosts(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
        "no_proxy",
        "NO_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{recorder.port}")
    rules = FetchRules(resolve=Resolver({"public.test": ["93.184.215.14"]}))
    with pytest.raises(Refused, match="localhost is a loopback address"):
        await fetch("http://localhost:8000/", rules=rules)
    with pytest.raises(Refused, match=r"169\.254\.169\.254 is a cloud metadata address"):
        await fetch("http://169.254.169.254/latest/", rules=rules)
    assert recorder.hits == []
    # A name this machine cannot resolve is the proxy's to look up; one it can is checked first.
    page = await fetch("http://only-the-proxy-knows.test/page", rules=rules)
    assert page.body == b"recorded"
    await fetch("http://public.test/docs", rules=rules)
    assert [(hit.path, hit.headers["host"]) for hit in recorder.hits] == [
        ("http://only-the-proxy-knows.test/page", "only-the-proxy-knows.test"),
        ("http://public.test/docs", "public.test"),
    ]
