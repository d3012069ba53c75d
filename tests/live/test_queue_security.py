"""Whom ``kubectl multisched queue`` gives the user's token: only a scheduler it verified,
found in one namespace. A real HTTPS server stands in for the scheduler and records every
TLS hello and every request it receives."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kmock_support import write_kubeconfig
from live_support import LiveCluster, run_cli
from multisched.live.queue import TOKEN_ENV
from multisched.operator.secure import self_signed

LABEL = {"app.kubernetes.io/name": "multisched"}
KUBECONFIG_TOKEN = "test-token"  # write_kubeconfig's
VIEW = {"leading": True, "profiles": {"my-scheduler": {"active": 1}}, "pods": []}
ANONYMOUS_FORBIDDEN = 'forbidden: User "system:anonymous" cannot get path "/debug/queue"'


@dataclass
class Scheduler:
    """A stand-in secure port: what reached it, and its certificate (self-signed, CA:FALSE,
    its own trust anchor)."""

    port: int
    cert: Path
    #: The server name of every TLS hello (None: no SNI, as for an IP address).
    hellos: list[str | None] = field(default_factory=list)
    #: The Authorization header of every HTTP request (None: anonymous).
    authorizations: list[str | None] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"


Serve = Callable[..., "contextlib.AbstractAsyncContextManager[Scheduler]"]


@pytest.fixture(autouse=True)
def _no_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)


@pytest.fixture
def serve(tmp_path: Path) -> Serve:
    """``async with serve(advertise=NAME, anonymous=False) as scheduler``: an aiohttp HTTPS
    server on a loopback port answering ``/debug/queue`` as a leader would, anonymous
    callers 403 unless ``anonymous``."""

    @contextlib.asynccontextmanager
    async def start(advertise: str | None = None, anonymous: bool = False) -> AsyncIterator[Any]:
        cert_pem, key_pem = self_signed(advertise)
        n = len(list(tmp_path.glob("server-*.pem")))
        cert, key = tmp_path / f"server-{n}.pem", tmp_path / f"server-{n}.key"
        cert.write_bytes(cert_pem)
        key.write_bytes(key_pem)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        scheduler = Scheduler(0, cert)
        context.sni_callback = lambda _sock, name, _ctx: scheduler.hellos.append(name)

        async def debug_queue(request: web.Request) -> web.Response:
            authorization = request.headers.get("Authorization")
            scheduler.authorizations.append(authorization)
            if authorization is None and not anonymous:
                return web.json_response({"message": ANONYMOUS_FORBIDDEN}, status=403)
            return web.json_response(VIEW)

        app = web.Application()
        app.router.add_get("/debug/queue", debug_queue)
        runner = web.AppRunner(app, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
        scheduler.port = int(runner.addresses[0][1])
        try:
            yield scheduler
        finally:
            await runner.cleanup()

    return start


def kubeconfig(path: Path, url: str, namespace: str | None = None, ca: Path | None = None) -> Path:
    return write_kubeconfig(path, url, token=KUBECONFIG_TOKEN, namespace=namespace, ca=ca)


async def scheduler_pod(live: LiveCluster, name: str, namespace: str, port: int) -> None:
    """A pod labelled as the chart labels the operator's, its ``https`` port ``port``."""
    await live.create(
        "pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(LABEL)},
            "spec": {
                "containers": [
                    {"name": "c", "image": "x", "ports": [{"name": "https", "containerPort": port}]}
                ]
            },
            "status": {"podIP": "127.0.0.1"},
        },
    )


def api_url(live: LiveCluster) -> str:
    return str(live.kmock.url).rstrip("/")


async def run_with(config: Path, *argv: str) -> tuple[int, str, str]:
    """``multisched ARGV`` with this kubeconfig: exit code, stdout, stderr."""
    return await asyncio.to_thread(run_cli, *argv, "--kubeconfig", str(config))


def pod_lists(live: LiveCluster) -> list[str]:
    return [r.url.path for r in live.kmock[lambda r: r.method == "GET" and "pods" in r.url.path]]


def one_error(err: str) -> str:
    """The single ``error:`` line the command printed (no traceback)."""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# -- discovery: one namespace ------------------------------------------------------------


async def test_discovery_asks_the_context_namespace_only(
    live: LiveCluster, serve: Serve, tmp_path: Path
) -> None:
    config = kubeconfig(tmp_path / "team", api_url(live), namespace="sched")
    async with serve() as real, serve(anonymous=True) as decoy:
        await scheduler_pod(live, "multisched-0", "sched", real.port)
        # Anyone who may create a pod elsewhere can label it as the scheduler's.
        await scheduler_pod(live, "multisched-decoy", "team-b", decoy.port)
        code, out, err = await run_with(config, "queue", f"--certificate-authority={real.cert}")
        assert code == 0, err
        assert out.splitlines()[1].split()[:2] == ["my-scheduler", "1"]
        assert pod_lists(live) == ["/api/v1/namespaces/sched/pods"]
        assert real.authorizations == [f"Bearer {KUBECONFIG_TOKEN}"]
        assert decoy.hellos == decoy.authorizations == []

        # --scheduler-namespace names the one namespace instead: the decoy's certificate is
        # not the one trusted, so it gets a TLS hello and nothing else.
        code, _, err = await run_with(
            config,
            "queue",
            "--scheduler-namespace=team-b",
            f"--certificate-authority={real.cert}",
        )
        assert code == 1
        assert "the scheduler's certificate is not trusted" in one_error(err)
        assert pod_lists(live)[1:] == ["/api/v1/namespaces/team-b/pods"]
        assert len(decoy.hellos) == 1 and decoy.authorizations == []


async def test_without_a_context_namespace_discovery_asks_default(
    live: LiveCluster, serve: Serve
) -> None:
    async with serve() as elsewhere:
        await scheduler_pod(live, "multisched-0", "multisched", elsewhere.port)
        code, _, err = await live.run("queue")
    assert code == 1
    assert one_error(err) == (
        "error: no running multisched pod found (app.kubernetes.io/name=multisched in "
        "namespace default): pass --scheduler-namespace, or --endpoint, e.g. after kubectl "
        "port-forward"
    )
    assert pod_lists(live) == ["/api/v1/namespaces/default/pods"]
    assert elsewhere.hellos == []


# -- verification ------------------------------------------------------------------------


async def test_an_unverified_scheduler_never_receives_the_token(
    live: LiveCluster, serve: Serve
) -> None:
    async with serve() as scheduler:
        # The kubeconfig names no CA: the system's trust, which the self-signed one fails.
        code, out, err = await live.run("queue", f"--endpoint={scheduler.url}", "--token=secret")
    assert (code, out) == (1, "")
    assert one_error(err) == (
        f"error: {scheduler.url}: the scheduler's certificate is not trusted (self-signed "
        "certificate): pass --certificate-authority with the CA that signed it (the chart's "
        "tls.secretName), or --insecure-skip-tls-verify to ask without a token"
    )
    assert len(scheduler.hellos) == 1  # asked, and the handshake refused
    assert scheduler.authorizations == []


async def test_the_certificate_authority_verifies_and_the_token_goes(
    live: LiveCluster, serve: Serve
) -> None:
    async with serve() as scheduler:
        code, out, err = await live.run(
            "queue", f"--endpoint={scheduler.url}", f"--certificate-authority={scheduler.cert}"
        )
    assert code == 0, err
    assert "my-scheduler" in out
    assert scheduler.authorizations == [f"Bearer {KUBECONFIG_TOKEN}"]


async def test_the_kubeconfig_clusters_ca_verifies_by_default(serve: Serve, tmp_path: Path) -> None:
    async with serve() as scheduler, serve() as other:
        # kubernetes_asyncio reads the CA of an https server only; with --endpoint the API
        # server is never asked.
        config = kubeconfig(tmp_path / "ca", "https://127.0.0.1:9", ca=scheduler.cert)
        code, _, err = await run_with(config, "queue", f"--endpoint={scheduler.url}")
        assert code == 0, err
        assert scheduler.authorizations == [f"Bearer {KUBECONFIG_TOKEN}"]

        # That CA, not any: another self-signed certificate is refused...
        code, _, err = await run_with(config, "queue", f"--endpoint={other.url}")
        assert code == 1
        assert "the scheduler's certificate is not trusted" in one_error(err)
        assert other.authorizations == []
        # ... unless --certificate-authority, which comes first, trusts it.
        code, _, err = await run_with(
            config, "queue", f"--endpoint={other.url}", f"--certificate-authority={other.cert}"
        )
        assert code == 0, err
        assert other.authorizations == [f"Bearer {KUBECONFIG_TOKEN}"]


async def test_insecure_skip_tls_verify_asks_without_a_token(
    live: LiveCluster, serve: Serve
) -> None:
    insecure = "--insecure-skip-tls-verify"
    async with serve(anonymous=True) as open_to_anyone, serve() as scheduler:
        code, out, err = await live.run("queue", f"--endpoint={open_to_anyone.url}", insecure)
        assert code == 0, err
        assert "my-scheduler" in out
        # The kubeconfig has a token; it stays home.
        assert open_to_anyone.authorizations == [None]

        code, _, err = await live.run("queue", f"--endpoint={scheduler.url}", insecure)
        assert code == 1
        assert one_error(err) == (
            f"error: {scheduler.url}: 403 {ANONYMOUS_FORBIDDEN} (--insecure-skip-tls-verify "
            "asks without a token, as anonymous: verify the scheduler with "
            "--certificate-authority to present one)"
        )
        assert scheduler.authorizations == [None]


async def test_tls_server_name_is_the_name_checked(live: LiveCluster, serve: Serve) -> None:
    service = "multisched.multisched.svc"
    async with serve(advertise=service) as scheduler:
        ca = f"--certificate-authority={scheduler.cert}"
        code, _, err = await live.run(
            "queue", f"--endpoint={scheduler.url}", ca, f"--tls-server-name={service}"
        )
        assert code == 0, err
        assert scheduler.hellos == [service]
        assert scheduler.authorizations == [f"Bearer {KUBECONFIG_TOKEN}"]

        # The certificate names the endpoint's host (127.0.0.1) too, but not this name.
        code, _, err = await live.run(
            "queue", f"--endpoint={scheduler.url}", ca, "--tls-server-name=elsewhere.example"
        )
        assert code == 1
        line = one_error(err)
        assert "the scheduler's certificate is not trusted (Hostname mismatch" in line
        assert "pass --tls-server-name with a name the certificate holds" in line
        assert scheduler.hellos[1:] == ["elsewhere.example"]
        assert scheduler.authorizations == [f"Bearer {KUBECONFIG_TOKEN}"]  # no second request


# -- token sources -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "file", "env", "sent"),
    [
        (None, None, None, KUBECONFIG_TOKEN),
        (None, None, "from-env", "from-env"),
        (None, "from-file\n", None, "from-file"),  # as `kubectl create token >FILE` writes
        (None, "from-file\n", "from-env", "from-file"),
        ("from-flag", "from-file\n", "from-env", "from-flag"),
    ],
)
async def test_the_token_comes_from_the_flag_the_file_the_environment_the_kubeconfig(
    live: LiveCluster,
    serve: Serve,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    flag: str | None,
    file: str | None,
    env: str | None,
    sent: str,
) -> None:
    argv = []
    if flag:
        argv.append(f"--token={flag}")
    if file:
        (tmp_path / "token").write_text(file)
        argv.append(f"--token-file={tmp_path / 'token'}")
    if env:
        monkeypatch.setenv(TOKEN_ENV, env)
    async with serve() as scheduler:
        code, _, err = await live.run(
            "queue",
            f"--endpoint={scheduler.url}",
            f"--certificate-authority={scheduler.cert}",
            *argv,
        )
    assert code == 0, err
    assert scheduler.authorizations == [f"Bearer {sent}"]


# -- refused before anything is asked -----------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (
            ["--insecure-skip-tls-verify", "--token=secret"],
            None,
            "error: --insecure-skip-tls-verify sends no token, as whoever answers is not "
            "verified: drop --token, or verify the scheduler with --certificate-authority "
            "instead",
        ),
        (
            ["--insecure-skip-tls-verify", "--token-file={tmp}/token"],
            None,
            "error: --insecure-skip-tls-verify sends no token, as whoever answers is not "
            "verified: drop --token-file, or verify the scheduler with "
            "--certificate-authority instead",
        ),
        (
            ["--insecure-skip-tls-verify"],
            "secret",
            "error: --insecure-skip-tls-verify sends no token, as whoever answers is not "
            "verified: drop $MULTISCHED_TOKEN, or verify the scheduler with "
            "--certificate-authority instead",
        ),
        (
            ["--insecure-skip-tls-verify", "--certificate-authority={tmp}/token"],
            None,
            "error: --certificate-authority and --insecure-skip-tls-verify contradict",
        ),
        (
            ["--token-file={tmp}/missing"],
            None,
            "error: cannot read the token file {tmp}/missing: No such file or directory",
        ),
        (["--token-file={tmp}/empty"], None, "error: the token file {tmp}/empty is empty"),
        (
            ["--token-file={tmp}/two"],
            None,
            "error: --token-file holds no single token (a space or line break)",
        ),
        (
            ["--token=a\r\nX-Injected: 1"],
            None,
            "error: --token holds no single token (a space or line break)",
        ),
        (
            ["--certificate-authority={tmp}/missing"],
            None,
            "error: cannot load the certificate authority {tmp}/missing: No such file or directory",
        ),
        (
            ["--certificate-authority={tmp}/token"],
            None,
            "error: cannot load the certificate authority {tmp}/token: no PEM certificate in it",
        ),
    ],
)
async def test_contradicting_or_unreadable_input_is_one_line_exit_2(
    live: LiveCluster,
    serve: Serve,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    env: str | None,
    message: str,
) -> None:
    (tmp_path / "token").write_text("secret\n")
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "two").write_text("one\ntwo\n")
    if env:
        monkeypatch.setenv(TOKEN_ENV, env)
    tmp = str(tmp_path)
    async with serve(anonymous=True) as scheduler:
        code, out, err = await live.run(
            "queue", f"--endpoint={scheduler.url}", *(a.format(tmp=tmp) for a in argv)
        )
    assert (code, out) == (2, "")
    assert one_error(err) == message.format(tmp=tmp)
    assert scheduler.hellos == scheduler.authorizations == []


async def test_a_plain_http_endpoint_is_refused(live: LiveCluster) -> None:
    code, _, err = await live.run("queue", "--endpoint=http://127.0.0.1:10259", "--token=x")
    assert code == 2
    assert one_error(err) == (
        "error: --endpoint http://127.0.0.1:10259: the secure port speaks https only "
        "(https://HOST:PORT); a token is never sent in the clear"
    )
