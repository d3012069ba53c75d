"""The secure port: ``/metrics``, ``/configz`` and ``/debug/*`` over TLS, for callers the
API server vouches for, as kube-scheduler serves them (``--secure-port``, 10259).

- **TLS**: the given certificate and key, reloaded when their files change (upstream's
  ``DynamicCertKeyPairContent``), else a self-signed one made at start (upstream's
  ``MaybeDefaultWithSelfSignedCerts``), for localhost, the advertised address and the
  Service's names.
- **Authentication** (delegated): a bearer token goes to a TokenReview. No token is the
  anonymous user (``system:anonymous``, group ``system:unauthenticated``), as upstream
  allows; a token the API server rejects is 401.
- **Authorization** (delegated): a SubjectAccessReview for the non-resource URL and the
  verb (``get``); not allowed is 403, worded as the API server words it.
- Both answers are cached for 10 s (upstream's default TTLs), so a scrape every few seconds
  costs no review per request.
- **Bounds**, since every review is work the API server does on the caller's behalf: a path
  no handler serves is answered 404 before any review; each cache keeps the 1,024 most
  recently used answers; callers waiting on the same answer share one review; reviews in
  flight and new reviews a second are capped, and past the caps the answer is 429. The
  reviews have a client of their own with two connections, so a flood of them cannot take
  the connections the bindings use (transport.reviews; the server is transport.serving's).
- An access log line for each request: method, path, user, answer (never the token).

The probes (``/healthz``, ``/livez``, ``/readyz``) stay on the plain port (health.py).
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import ipaddress
import json
import logging
import os
import shutil
import socket
import ssl
import tempfile
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from multisched.transport.reviews import ReviewUnavailable, UserInfo
from multisched.transport.serving import Handler, HttpServer, Reply, Request

logger = logging.getLogger(__name__)
#: One line per request on the secure port; a logger of its own so that it can be silenced.
access_log = logging.getLogger("multisched.access")
T = TypeVar("T")

#: Upstream's delegated authn/authz cache TTLs (allowed and denied alike).
REVIEW_TTL_SECONDS = 10.0
#: Answers kept per cache (tokens, decisions); the least recently used go first.
REVIEW_CACHE_ENTRIES = 1024
#: Reviews under way at once. A scrape or a person needs one at a time; more is a flood.
MAX_REVIEWS_IN_FLIGHT = 4
#: New reviews a second, after a burst of REVIEW_BURST: a token bucket, as client-go's QPS.
REVIEW_RATE_PER_SECOND = 5.0
REVIEW_BURST = 20
#: Seconds between looks at the serving certificate's files (kubelet takes up to a minute
#: to swap a mounted Secret's).
CERTIFICATE_POLL_SECONDS = 10.0


ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))


class ReviewThrottled(Exception):
    """Too many reviews under way or asked of late: the caller is told to come back."""


class Reviewer(Protocol):
    async def authenticate(self, token: str) -> UserInfo | None:
        """The token's user, or None when the API server does not accept the token."""

    async def authorize(self, user: UserInfo, path: str, verb: str) -> tuple[bool, str]:
        """Whether ``user`` may ``verb`` the non-resource ``path``, and the reason given."""


class _Answers:
    """Answers until their deadline, least recently used dropped past ``size``, and the
    reviews under way, so that callers asking the same thing at once share one review."""

    __slots__ = ("entries", "pending", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self.pending: dict[Hashable, asyncio.Future[Any]] = {}

    def get(self, key: Hashable, now: float) -> tuple[bool, Any]:
        hit = self.entries.get(key)
        if hit is None:
            return False, None
        if hit[0] <= now:
            del self.entries[key]
            return False, None
        self.entries.move_to_end(key)
        return True, hit[1]

    def put(self, key: Hashable, value: Any, until: float) -> None:
        self.entries[key] = (until, value)
        self.entries.move_to_end(key)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


class _Bucket:
    """A token bucket: ``burst`` at once, then ``rate`` a second."""

    __slots__ = ("at", "burst", "rate", "tokens")

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate, self.burst = rate, float(burst)
        self.tokens, self.at = float(burst), now

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


class CachingReviewer:
    """Remembers answers for ``ttl`` seconds (tokens only as digests) and bounds the reviews
    it asks of ``inner``: ``max_in_flight`` at once, ``rate`` a second after ``burst``."""

    def __init__(
        self,
        inner: Reviewer,
        ttl: float = REVIEW_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        *,
        entries: int = REVIEW_CACHE_ENTRIES,
        max_in_flight: int = MAX_REVIEWS_IN_FLIGHT,
        rate: float = REVIEW_RATE_PER_SECOND,
        burst: int = REVIEW_BURST,
    ) -> None:
        self.inner = inner
        self.ttl = ttl
        self.clock = clock
        self.max_in_flight = max_in_flight
        self.in_flight = 0
        self._bucket = _Bucket(rate, burst, clock())
        self._users = _Answers(entries)
        self._decisions = _Answers(entries)

    async def _review(self, answers: _Answers, key: Hashable, ask: Callable[[], Awaitable[T]]) -> T:
        now = self.clock()
        found, value = answers.get(key, now)
        if found:
            return value  # type: ignore[no-any-return]
        shared = answers.pending.get(key)
        if shared is not None:
            return await asyncio.shield(shared)
        if self.in_flight >= self.max_in_flight or not self._bucket.take(now):
            raise ReviewThrottled("too many callers to check at once")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        answers.pending[key] = future
        self.in_flight += 1
        try:
            value = await ask()
        except BaseException as exc:
            shared_exc = exc if isinstance(exc, Exception) else ReviewUnavailable("cancelled")
            future.set_exception(shared_exc)
            future.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        finally:
            self.in_flight -= 1
            del answers.pending[key]
        answers.put(key, value, self.clock() + self.ttl)
        future.set_result(value)
        return value

    async def authenticate(self, token: str) -> UserInfo | None:
        key = hashlib.sha256(token.encode()).digest()
        return await self._review(self._users, key, lambda: self.inner.authenticate(token))

    async def authorize(self, user: UserInfo, path: str, verb: str) -> tuple[bool, str]:
        key = (user.name, user.uid, user.groups, tuple(sorted(user.extra.items())), path, verb)
        return await self._review(
            self._decisions, key, lambda: self.inner.authorize(user, path, verb)
        )


#: The API server's words for a path or method it does not serve.
NOT_SERVED = {
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
}


def _status(
    code: int, reason: str, message: str, headers: Mapping[str, str] | None = None
) -> Reply:
    """A ``metav1.Status`` body, as the API server and kube-scheduler answer refusals."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {},
        "code": code,
    }
    return Reply(code, json.dumps(body), "application/json", headers)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


class SecureServer:
    def __init__(
        self,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext,
        reviewer: Reviewer,
        routes: Mapping[str, Handler],
        *,
        certificate: ServingCertificate | None = None,
    ) -> None:
        self.reviewer = reviewer
        self._last_error = ""
        #: Given files to reload when they change (None: a self-signed pair, never renewed).
        self.certificate = certificate
        self._watch: asyncio.Task[None] | None = None
        self._server = HttpServer(
            host,
            port,
            {("GET", path): handler for path, handler in routes.items()},  # and so HEAD
            ssl_context=ssl_context,
            guard=self._guard,
        )

    @property
    def port(self) -> int:
        """The port bound once started (0 asks for any free one)."""
        return self._server.port

    async def start(self) -> None:
        server = self._server
        await server.start()
        if self.certificate is not None:
            self._watch = asyncio.create_task(self.certificate.watch())
        logger.info("metrics, configz and debug on https://%s:%d", server.host, server.port)

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
            self._watch = None
        await self._server.stop()

    async def _guard(self, request: Request, handler: Handler | None) -> Reply:
        user, reply = await self._answer(request, handler)
        access_log.info("%s %s user=%s %d", request.method, request.path, user or "-", reply.status)
        return reply

    async def _answer(self, request: Request, handler: Handler | None) -> tuple[str | None, Reply]:
        # Route first: a path no handler serves costs the API server nothing.
        if handler is None:
            code, reason = request.unrouted or (404, "Not Found")
            return None, _status(code, reason.replace(" ", ""), NOT_SERVED.get(code, reason))
        verb = "get" if request.method in ("GET", "HEAD") else request.method.lower()
        try:
            token = _bearer(request)
            if token is None:
                user: UserInfo | None = ANONYMOUS
            else:
                user = await self.reviewer.authenticate(token)
            if user is None:
                return None, _status(401, "Unauthorized", "Unauthorized")
            allowed, reason = await self.reviewer.authorize(user, request.path, verb)
        except ReviewThrottled as exc:
            message = f"{exc}: try again in a second"
            return None, _status(429, "TooManyRequests", message, {"Retry-After": "1"})
        except ReviewUnavailable as exc:
            if str(exc) != self._last_error:
                self._last_error = str(exc)
                logger.warning("cannot check a caller of %s: %s", request.path, exc)
            return None, _status(503, "ServiceUnavailable", f"cannot check the caller: {exc}")
        if not allowed:
            message = f'forbidden: User "{user.name}" cannot {verb} path "{request.path}"'
            if reason:
                message += f": {reason}"
            return user.name, _status(403, "Forbidden", message)
        return user.name, await handler(request)


# -- the serving certificate ------------------------------------------------------------


def service_dns_names(service: str | None, namespace: str | None) -> tuple[str, ...]:
    """The names a Service answers to in the cluster (``<svc>``, ``<svc>.<ns>``,
    ``<svc>.<ns>.svc``, ``<svc>.<ns>.svc.cluster.local``); none without both."""
    if not (service and namespace):
        return ()
    qualified = f"{service}.{namespace}"
    return (service, qualified, f"{qualified}.svc", f"{qualified}.svc.cluster.local")


def serving_context(
    cert_file: str | None,
    key_file: str | None,
    advertise: str | None = None,
    dns_names: Sequence[str] = (),
) -> ssl.SSLContext:
    """A server TLS context from the given files, else from a fresh self-signed pair."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file and key_file:
        context.load_cert_chain(cert_file, key_file)
        return context
    _load_pem(context, *self_signed(advertise, dns_names))
    return context


def _load_pem(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    folder = tempfile.mkdtemp(prefix="multisched-tls-")
    try:  # ssl loads only from files; they live for this call only
        cert_path, key_path = os.path.join(folder, "tls.crt"), os.path.join(folder, "tls.key")
        for path, data in ((cert_path, cert_pem), (key_path, key_pem)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as out:
                out.write(data)
        context.load_cert_chain(cert_path, key_path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _key_type(cert_pem: bytes) -> str:
    from cryptography import x509

    return type(x509.load_pem_x509_certificate(cert_pem).public_key()).__name__


class ServingCertificate:
    """The given certificate and key files, reloaded into the serving context when their
    content changes (a mounted Secret is swapped by kubelet within a minute of an update:
    cert-manager's renewals), so that new handshakes get the new pair without a restart.

    A new pair is loaded first into a scratch context: OpenSSL replaces the certificate
    before it checks the key, so a bad pair loaded straight into the serving context would
    leave it without a usable key. A pair that does not load is logged once and the previous
    one keeps serving; so is one of another key type, which OpenSSL would keep beside the
    old pair (one slot per key type) instead of replacing it."""

    __slots__ = ("_digest", "_key_type", "_refused", "cert_file", "context", "interval", "key_file")

    def __init__(
        self,
        context: ssl.SSLContext,
        cert_file: str,
        key_file: str,
        interval: float = CERTIFICATE_POLL_SECONDS,
    ) -> None:
        self.context = context
        self.cert_file, self.key_file = cert_file, key_file
        self.interval = interval
        self._digest = b""
        self._refused = b""
        self._key_type: str | None = None
        self.reload()

    def reload(self) -> bool:
        """Load the files' pair if it changed and is sound; whether a new pair was loaded.
        On the loop's thread: the context is not changed under a handshake."""
        try:
            with open(self.cert_file, "rb") as cert, open(self.key_file, "rb") as key:
                cert_pem, key_pem = cert.read(), key.read()
        except OSError as exc:  # between kubelet's swaps, or the Secret is gone
            return self._refuse(f"{exc.strerror}: {exc.filename}".encode(), str(exc))
        digest = hashlib.sha256(cert_pem + b"\0" + key_pem).digest()
        if digest == self._digest:
            self._refused = b""  # back to the pair serving: a bad one again is news again
            return False
        if digest == self._refused:
            return False
        try:
            _load_pem(ssl.create_default_context(ssl.Purpose.CLIENT_AUTH), cert_pem, key_pem)
            key_type = _key_type(cert_pem)
        except (ssl.SSLError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or str(exc)
            return self._refuse(digest, f"not a PEM certificate and its key ({reason})")
        if self._key_type is not None and key_type != self._key_type:
            return self._refuse(
                digest, f"its key is {key_type}, not {self._key_type}: restart to change it"
            )
        _load_pem(self.context, cert_pem, key_pem)
        if self._key_type is not None:
            logger.info("serving certificate %s reloaded", self.cert_file)
        self._digest, self._refused, self._key_type = digest, b"", key_type
        return True

    def _refuse(self, digest: bytes, reason: str) -> bool:
        if digest != self._refused:
            self._refused = digest
            logger.warning(
                "serving certificate %s and key %s not reloaded, the previous pair serves on: %s",
                self.cert_file,
                self.key_file,
                reason,
            )
        return False

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                self.reload()
            except Exception:  # never stop watching over one bad look
                logger.exception("serving certificate %s: reload failed", self.cert_file)


def self_signed(advertise: str | None = None, dns_names: Sequence[str] = ()) -> tuple[bytes, bytes]:
    """A one-year ECDSA P-256 serving certificate for localhost, 127.0.0.1, the host name,
    the advertised address and ``dns_names`` (the Service's), signed by its own key (PEM
    certificate, PEM key). An end-entity certificate (CA:FALSE, no keyCertSign): trusted
    as itself (``--certificate-authority`` set to it), it can vouch for nothing else."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    hosts = dict.fromkeys(["localhost", socket.gethostname(), *dns_names])
    names: list[x509.GeneralName] = [x509.DNSName(host) for host in hosts]
    addresses = {"127.0.0.1", "::1"}
    if advertise:
        addresses.add(advertise)
    for address in sorted(addresses):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(address)))
        except ValueError:
            names.append(x509.DNSName(address))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"localhost@{int(time.time())}")])
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            # An ECDSA key signs (ECDHE); keyEncipherment is RSA key transport's.
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem
