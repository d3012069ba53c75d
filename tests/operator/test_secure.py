"""The secure port: TLS, delegated authentication and authorization, as kube-scheduler's."""

from __future__ import annotations

import asyncio
import logging
import ssl
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509

from multisched.operator.main import build_parser, options_from_args
from multisched.operator.options import Options
from multisched.operator.secure import (
    ANONYMOUS,
    CachingReviewer,
    Reviewer,
    ReviewThrottled,
    ReviewUnavailable,
    SecureServer,
    ServingCertificate,
    UserInfo,
    self_signed,
    service_dns_names,
    serving_context,
)
from multisched.transport.reviews import KubeReviewer
from multisched.transport.serving import Reply, Request
from strangers import flood


class Scripted:
    """A reviewer as the API server answers: tokens -> users, (user, path) -> allowed."""

    def __init__(self, users: dict[str, UserInfo], allowed: set[tuple[str, str]]) -> None:
        self.users = users
        self.allowed = allowed
        self.calls: list[tuple[str, Any]] = []
        self.down = False

    async def authenticate(self, token: str) -> UserInfo | None:
        self.calls.append(("authenticate", token))
        if self.down:
            raise ReviewUnavailable("TokenReview failed: 503 Service Unavailable")
        return self.users.get(token)

    async def authorize(self, user: UserInfo, path: str, verb: str) -> tuple[bool, str]:
        self.calls.append(("authorize", (user.name, path, verb)))
        if self.down:
            raise ReviewUnavailable("SubjectAccessReview failed: 503 Service Unavailable")
        if (user.name, path) in self.allowed:
            return True, ""
        return False, ""


PROMETHEUS = UserInfo(
    "system:serviceaccount:monitoring:prometheus", "u1", ("system:authenticated",)
)


async def ok(request: Request) -> Reply:
    return Reply(body="payload")


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, Scripted]]:
    reviewer = Scripted({"good": PROMETHEUS}, {(PROMETHEUS.name, "/metrics")})
    secure = SecureServer(
        "127.0.0.1",
        0,
        serving_context(None, None),
        reviewer,
        {"/metrics": ok, "/debug/queue": ok},
    )
    await secure.start()
    try:
        yield f"https://127.0.0.1:{secure.port}", reviewer
    finally:
        await secure.stop()


async def get(url: str, token: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers, ssl=False) as resp:
        body = await (resp.json() if resp.content_type == "application/json" else resp.text())
        return resp.status, body


async def test_an_allowed_caller_is_answered_over_tls(server: tuple[str, Scripted]) -> None:
    url, reviewer = server
    assert await get(f"{url}/metrics", "good") == (200, "payload")
    assert reviewer.calls == [
        ("authenticate", "good"),
        ("authorize", (PROMETHEUS.name, "/metrics", "get")),
    ]


async def test_plain_http_is_not_served(server: tuple[str, Scripted]) -> None:
    url, _ = server
    with pytest.raises(aiohttp.ClientError):
        await get(url.replace("https", "http") + "/metrics", "good")


async def test_an_anonymous_caller_is_checked_as_system_anonymous(
    server: tuple[str, Scripted],
) -> None:
    url, reviewer = server
    status, body = await get(f"{url}/metrics")
    assert status == 403
    assert body["kind"] == "Status" and body["reason"] == "Forbidden"
    assert body["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    assert reviewer.calls == [("authorize", ("system:anonymous", "/metrics", "get"))]
    assert ANONYMOUS.groups == ("system:unauthenticated",)


async def test_a_token_the_api_server_rejects_is_401(server: tuple[str, Scripted]) -> None:
    url, reviewer = server
    status, body = await get(f"{url}/metrics", "stolen")
    assert (status, body["reason"], body["code"]) == (401, "Unauthorized", 401)
    assert [c[0] for c in reviewer.calls] == ["authenticate"]  # never authorized


async def test_each_path_is_authorized_on_its_own(server: tuple[str, Scripted]) -> None:
    url, _ = server
    status, body = await get(f"{url}/debug/queue", "good")
    assert status == 403
    assert body["message"] == (
        f'forbidden: User "{PROMETHEUS.name}" cannot get path "/debug/queue"'
    )


async def test_an_unreachable_api_server_answers_503_not_a_verdict(
    server: tuple[str, Scripted], caplog: pytest.LogCaptureFixture
) -> None:
    url, reviewer = server
    reviewer.down = True
    status, body = await get(f"{url}/metrics", "good")
    assert status == 503
    assert "cannot check the caller: TokenReview failed" in body["message"]
    await get(f"{url}/metrics", "good")
    warnings = [r for r in caplog.records if "cannot check a caller" in r.getMessage()]
    assert len(warnings) == 1  # the same reason is logged once


async def test_answers_are_cached_for_ten_seconds() -> None:
    now = [0.0]
    inner = Scripted({"good": PROMETHEUS}, {(PROMETHEUS.name, "/metrics")})
    cached = CachingReviewer(inner, clock=lambda: now[0])
    for _ in range(3):
        assert await cached.authenticate("good") == PROMETHEUS
        assert await cached.authorize(PROMETHEUS, "/metrics", "get") == (True, "")
        assert await cached.authenticate("bad") is None  # refusals are cached too
    assert len(inner.calls) == 3
    assert "good" not in str(cached._users)  # tokens are kept as digests only
    now[0] = 10.5
    await cached.authenticate("good")
    await cached.authorize(PROMETHEUS, "/metrics", "get")
    assert len(inner.calls) == 5


def test_the_self_signed_certificate_names_localhost_and_the_advertised_address() -> None:
    cert_pem, _ = self_signed("10.1.2.3")
    cert = x509.load_pem_x509_certificate(cert_pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    ips = {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    assert {"127.0.0.1", "10.1.2.3"} <= ips
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).days >= 365


def test_the_self_signed_certificate_names_the_service_when_known() -> None:
    names = service_dns_names("multisched", "ops")
    assert names == (
        "multisched",
        "multisched.ops",
        "multisched.ops.svc",
        "multisched.ops.svc.cluster.local",
    )
    assert service_dns_names("multisched", None) == service_dns_names(None, "ops") == ()
    cert = x509.load_pem_x509_certificate(self_signed("10.1.2.3", names)[0])
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names) | {"localhost"} <= set(san.get_values_for_type(x509.DNSName))
    assert {"10.1.2.3", "127.0.0.1"} <= {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}
    options = Options.from_env({"MULTISCHED_SERVICE_NAME": "multisched", "POD_NAMESPACE": "ops"})
    assert (options.service_name, options.service_namespace) == ("multisched", "ops")


def test_the_self_signed_certificate_is_an_end_entity() -> None:
    """CA:FALSE (critical), keyUsage digitalSignature only (no keyCertSign), serverAuth and
    key identifiers: trusted as itself it can vouch for no other certificate."""
    cert = x509.load_pem_x509_certificate(self_signed()[0])
    constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical and constraints.value.ca is False
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical and usage.value.digital_signature
    assert not (usage.value.key_cert_sign or usage.value.crl_sign)
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]
    skid = cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    assert skid == x509.SubjectKeyIdentifier.from_public_key(cert.public_key())
    akid = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    assert akid.key_identifier == skid.digest


async def test_the_self_signed_certificate_verifies_as_its_own_trust_anchor() -> None:
    """What kubectl --certificate-authority and ``multisched queue`` do with it: OpenSSL
    accepts the end-entity certificate as a trust anchor, strict X.509 checks included."""
    reviewer = Scripted({"good": PROMETHEUS}, {(PROMETHEUS.name, "/metrics")})
    secure = SecureServer("127.0.0.1", 0, serving_context(None, None), reviewer, {"/metrics": ok})
    await secure.start()
    try:
        served = await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", secure.port))
        trusting = ssl.create_default_context(cadata=served)
        trusting.verify_flags |= ssl.VERIFY_X509_STRICT
        async with aiohttp.ClientSession() as http:
            url = f"https://localhost:{secure.port}/metrics"
            headers = {"Authorization": "Bearer good"}
            async with http.get(url, headers=headers, ssl=trusting) as resp:
                assert resp.status == 200
    finally:
        await secure.stop()


def _signed_by_ca(common_name: str) -> tuple[bytes, bytes]:
    """A leaf for localhost issued by a CA of its own (cert-manager's shape), PEM pair."""
    import datetime

    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


async def _served_common_name(port: int) -> str:
    pem = await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", port))
    cert = x509.load_pem_x509_certificate(pem.encode())
    return str(cert.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)[0].value)


async def _until_served(port: int, common_name: str, seconds: float = 5.0) -> str:
    served = ""
    for _ in range(int(seconds / 0.05)):
        served = await _served_common_name(port)
        if served == common_name:
            break
        await asyncio.sleep(0.05)
    return served


def _swap(folder: Path, pair: tuple[bytes, bytes], generation: int) -> None:
    """As kubelet updates a mounted Secret: new files, then the ..data symlink swapped."""
    data = folder / f"..data-{generation}"
    data.mkdir()
    (data / "tls.crt").write_bytes(pair[0])
    (data / "tls.key").write_bytes(pair[1])
    link = folder / "..data_tmp"
    link.symlink_to(data.name)
    link.replace(folder / "..data")
    for name in ("tls.crt", "tls.key"):
        if not (folder / name).is_symlink():
            (folder / name).symlink_to(f"..data/{name}")


async def test_a_renewed_certificate_is_served_without_a_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Pair A, then B swapped in as kubelet swaps a Secret's files: new connections get B
    within the poll interval; then a broken pair: B serves on, with one warning line."""
    _swap(tmp_path, _signed_by_ca("pair-a"), 1)
    cert, key = str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")
    context = serving_context(cert, key)
    reviewer = Scripted({}, set())
    watched = ServingCertificate(context, cert, key, interval=0.05)
    secure = SecureServer("127.0.0.1", 0, context, reviewer, {}, certificate=watched)
    await secure.start()
    try:
        assert await _served_common_name(secure.port) == "pair-a"
        _swap(tmp_path, _signed_by_ca("pair-b"), 2)
        assert await _until_served(secure.port, "pair-b") == "pair-b"

        caplog.set_level(logging.WARNING, logger="multisched.operator.secure")
        broken = _signed_by_ca("pair-c")
        _swap(tmp_path, (broken[0], _signed_by_ca("other")[1]), 3)  # another cert's key
        await asyncio.sleep(0.5)  # ten polls
        assert await _served_common_name(secure.port) == "pair-b"
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1, warnings
        assert "not reloaded, the previous pair serves on" in warnings[0]
        assert "\n" not in warnings[0]
    finally:
        await secure.stop()
    assert secure._watch is None


def test_a_pair_of_another_key_type_is_not_loaded_beside_the_old_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    cert_pem, key_pem = self_signed()
    (tmp_path / "tls.crt").write_bytes(cert_pem)
    (tmp_path / "tls.key").write_bytes(key_pem)
    cert, key = str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")
    watched = ServingCertificate(serving_context(cert, key), cert, key)
    old = x509.load_pem_x509_certificate(cert_pem)
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    rsa_cert = (
        x509.CertificateBuilder()
        .subject_name(old.subject)
        .issuer_name(old.subject)
        .public_key(rsa_key.public_key())
        .serial_number(1)
        .not_valid_before(old.not_valid_before_utc)
        .not_valid_after(old.not_valid_after_utc)
        .sign(rsa_key, hashes.SHA256())
    )
    (tmp_path / "tls.crt").write_bytes(rsa_cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "tls.key").write_bytes(
        rsa_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with caplog.at_level(logging.WARNING, logger="multisched.operator.secure"):
        assert watched.reload() is False
        assert watched.reload() is False
    assert [r.getMessage().endswith("restart to change it") for r in caplog.records] == [True]
    (tmp_path / "tls.crt").write_bytes(cert_pem)
    (tmp_path / "tls.key").write_bytes(key_pem)
    assert watched.reload() is False  # the pair serving: nothing to load


async def test_a_given_certificate_is_served(tmp_path: Path) -> None:
    cert_pem, key_pem = self_signed()
    (tmp_path / "tls.crt").write_bytes(cert_pem)
    (tmp_path / "tls.key").write_bytes(key_pem)
    reviewer = Scripted({"good": PROMETHEUS}, {(PROMETHEUS.name, "/metrics")})
    context = serving_context(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    secure = SecureServer("127.0.0.1", 0, context, reviewer, {"/metrics": ok})
    await secure.start()
    try:
        trusting = ssl.create_default_context(cadata=cert_pem.decode())
        async with aiohttp.ClientSession() as http:
            url = f"https://localhost:{secure.port}/metrics"
            headers = {"Authorization": "Bearer good"}
            async with http.get(url, headers=headers, ssl=trusting) as resp:
                assert resp.status == 200  # verified against the given certificate
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await http.get(url, headers=headers, ssl=ssl.create_default_context())
    finally:
        await secure.stop()


def parse(*argv: str) -> Options:
    return options_from_args(build_parser().parse_args(list(argv)), Options())


def test_secure_port_flags() -> None:
    opts = parse()
    assert (opts.secure_port, opts.bind_address, opts.tls_cert_file) == (10259, "0.0.0.0", None)
    opts = parse("--secure-port=0", "--bind-address=127.0.0.1", "--advertise-address=10.0.0.7")
    assert (opts.secure_port, opts.bind_address, opts.advertise_address) == (
        0,
        "127.0.0.1",
        "10.0.0.7",
    )
    env = Options.from_env({"MULTISCHED_SECURE_PORT": "9443", "POD_IP": "10.9.8.7"})
    assert (env.secure_port, env.advertise_address) == (9443, "10.9.8.7")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--tls-cert-file=/x.crt",), "--tls-cert-file needs --tls-private-key-file too"),
        (("--tls-private-key-file=/x.key",), "--tls-private-key-file needs --tls-cert-file"),
        (
            ("--tls-cert-file=/nowhere.crt", "--tls-private-key-file=/nowhere.key"),
            "--tls-cert-file: cannot read /nowhere.crt",
        ),
        (("--secure-port=70000",), "--secure-port: 70000 is not a port number"),
    ],
)
def test_bad_serving_flags_are_one_line(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse(*argv).check()


def test_a_certificate_that_does_not_load_is_one_line(tmp_path: Path) -> None:
    cert_pem, _ = self_signed()
    _, other_key = self_signed()  # a key of another certificate
    (tmp_path / "tls.crt").write_bytes(cert_pem)
    (tmp_path / "tls.key").write_bytes(other_key)
    (tmp_path / "junk.crt").write_text("not a certificate")
    for cert, key in (("tls.crt", "tls.key"), ("junk.crt", "tls.key")):
        opts = parse(
            f"--tls-cert-file={tmp_path / cert}", f"--tls-private-key-file={tmp_path / key}"
        )
        with pytest.raises(ValueError, match="are not a PEM certificate and its key") as err:
            opts.check()
        assert "\n" not in str(err.value)


# -- bounds: what an unauthenticated caller can make the API server do -------------------


class Slow(Scripted):
    """A reviewer whose answers wait until the test lets them go."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.release = asyncio.Event()

    async def authenticate(self, token: str) -> UserInfo | None:
        self.calls.append(("authenticate", token))
        await self.release.wait()
        return self.users.get(token)


def bounded_server(reviewer: Reviewer, **bounds: Any) -> SecureServer:
    # A frozen clock: no answer expires and the bucket never refills, so counts are exact.
    cached = CachingReviewer(reviewer, clock=lambda: 0.0, **bounds)
    return SecureServer(
        "127.0.0.1", 0, serving_context(None, None), cached, {"/metrics": ok, "/debug/queue": ok}
    )


async def test_unserved_paths_and_methods_cost_no_review() -> None:
    reviewer = Scripted({"good": PROMETHEUS}, {(PROMETHEUS.name, "/metrics")})
    secure = bounded_server(reviewer)
    await secure.start()
    url = f"https://127.0.0.1:{secure.port}"
    try:
        paths = [f"/{uuid.uuid4().hex}" for _ in range(2000)]
        assert await flood(url, [(path, None) for path in paths]) == Counter({404: 2000})
        status, body = await get(f"{url}/nowhere", "good")
        assert (status, body["reason"]) == (404, "NotFound")
        async with aiohttp.ClientSession() as http, http.post(f"{url}/metrics", ssl=False) as r:
            assert r.status == 405
        assert reviewer.calls == []
    finally:
        await secure.stop()


async def test_a_flood_of_callers_causes_at_most_the_capped_reviews() -> None:
    reviewer = Scripted({"good": PROMETHEUS}, {(PROMETHEUS.name, "/metrics")})
    secure = bounded_server(reviewer, burst=20)
    await secure.start()
    url = f"https://127.0.0.1:{secure.port}"
    try:
        # 2,000 anonymous callers of a served path: one SubjectAccessReview, then the cache.
        answers = await flood(url, [("/metrics", None)] * 2000)
        assert answers == Counter({403: 2000})
        assert reviewer.calls == [("authorize", ("system:anonymous", "/metrics", "get"))]
        # 2,000 random tokens: what is left of the burst (one review went to the anonymous
        # callers) as TokenReviews, and 429 for everyone else.
        reviewer.calls.clear()
        answers = await flood(url, [("/metrics", uuid.uuid4().hex) for _ in range(2000)])
        assert answers == Counter({401: 19, 429: 1981})
        assert [c[0] for c in reviewer.calls] == ["authenticate"] * 19
    finally:
        await secure.stop()


async def test_reviews_in_flight_are_capped_and_shared() -> None:
    inner = Slow({"good": PROMETHEUS}, set())
    cached = CachingReviewer(inner, clock=lambda: 0.0, max_in_flight=2, burst=100)
    # Ten callers with the same token wait on one review; two other tokens fill the cap.
    same = [asyncio.ensure_future(cached.authenticate("good")) for _ in range(10)]
    others = [asyncio.ensure_future(cached.authenticate(f"t{i}")) for i in range(3)]
    await asyncio.sleep(0)
    assert [c[1] for c in inner.calls] == ["good", "t0"]
    with pytest.raises(ReviewThrottled):
        await others[1]
    inner.release.set()
    assert await asyncio.gather(*same) == [PROMETHEUS] * 10
    assert await others[0] is None
    assert cached.in_flight == 0
    assert await cached.authenticate("t5") is None  # room again once the reviews ended
    others[2].cancel()


async def test_the_review_rate_refills_as_time_passes() -> None:
    now = [0.0]
    inner = Scripted({}, set())
    cached = CachingReviewer(inner, clock=lambda: now[0], rate=2.0, burst=3)
    for i in range(3):
        assert await cached.authenticate(f"t{i}") is None
    with pytest.raises(ReviewThrottled):
        await cached.authenticate("t3")
    assert await cached.authenticate("t0") is None  # an answer held costs no review
    now[0] = 0.5  # one more review after half a second at 2 a second
    assert await cached.authenticate("t3") is None
    with pytest.raises(ReviewThrottled):
        await cached.authenticate("t4")
    assert len(inner.calls) == 4


async def test_the_caches_keep_the_most_recently_used_answers() -> None:
    inner = Scripted({"good": PROMETHEUS}, set())
    cached = CachingReviewer(inner, clock=lambda: 0.0, entries=3, burst=100)
    for token in ("good", "a", "b"):
        await cached.authenticate(token)
    await cached.authenticate("good")  # used again: now the most recent
    for token in ("c", "d"):
        await cached.authenticate(token)
    assert len(cached._users.entries) == 3
    inner.calls.clear()
    await cached.authenticate("good")  # still held
    await cached.authenticate("a")  # dropped: asked again
    assert inner.calls == [("authenticate", "a")]


async def test_each_request_is_logged_without_its_token(
    server: tuple[str, Scripted], caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = server
    caplog.set_level(logging.INFO, logger="multisched.access")
    await get(f"{url}/metrics", "good")
    await get(f"{url}/metrics", "s3cret-token")
    await get(f"{url}/nowhere")
    lines = [r.getMessage() for r in caplog.records if r.name == "multisched.access"]
    assert lines == [
        f"GET /metrics user={PROMETHEUS.name} 200",
        "GET /metrics user=- 401",
        "GET /nowhere user=- 404",
    ]
    assert not any("s3cret" in r.getMessage() or "good" in r.getMessage() for r in caplog.records)


async def test_the_reviews_have_a_client_of_their_own() -> None:
    from kubernetes_asyncio import client as k8s

    config = k8s.Configuration(host="https://127.0.0.1:6443")
    config.api_key = {"BearerToken": "Bearer operator-token"}
    reviewer = KubeReviewer(config)
    try:
        own = reviewer.api_client.configuration
        assert own is not config and own.connection_pool_maxsize == 2
        assert config.connection_pool_maxsize == 100  # the operator's pool is untouched
        assert own.api_key is config.api_key  # a refreshed token reaches both
    finally:
        await reviewer.close()
