#!/usr/bin/env python3
"""docs/security.md's OAUTHBEARER (JWKS) walk-through, run: its blocks on
Fjord, then the same client checks on Fjord and on Apache Kafka 4.4
configured the same way.

Usage: oauth.py [fjord|kafka ...]   (default: both; FJORD_BIN names the binary)

1. Every `sh` block of the section "OAUTHBEARER with signed tokens (JWKS),
   step by step" runs, in order, in a fresh directory with `fjord` on the
   PATH and free ports in place of 9096 (SASL_PLAINTEXT) and 9097 (the
   brokers' listener): the identity provider's RSA key and its JWKS file,
   the properties, the start.
2. Kafka (scripts/peers/kafka) starts on the same JWKS file with the same
   `sasl.*` and `listener.name.*` keys, read from that properties block, and
   the JVM property Kafka 4.x needs before it reads a JWKS URL.
3. On each, confluent-kafka clients whose `oauth_cb` gives a token signed
   at test time: a valid token produces and reads back; tokens signed by
   another key, expired, for another audience, from another issuer, or
   unsigned (`alg` `none`) are refused with an authentication error; and a
   table of claim cases (iat, nbf, kid, sub, aud, iss, scope, exp within the
   skew) probed on Kafka 4.4 is served or refused on both alike; a key
   written to the JWKS file is taken at the next read (both brokers started
   with `sasl.oauthbearer.jwks.endpoint.refresh.ms=1000`).
4. The Java client 4.4 (scripts/compat/java.sh --oauth) with its own
   OAUTHBEARER login reading the token from a file
   (`sasl.oauthbearer.token.endpoint.url=file://…`): a signed token produces
   and reads back; tokens signed by another key or expired are refused with
   SaslAuthenticationException.
Exits 0 when every check passes on every broker asked for.
"""

import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from checks import CheckFailed, log, run_checks
from security import COMPAT, DOC, KAFKA, expect, free_port, stop_work

JAVA = os.path.join(COMPAT, "java.sh")
SECTION = "## OAUTHBEARER with signed tokens (JWKS), step by step"
ISSUER = "https://idp.example"
AUDIENCE = "fjord"


def doc_blocks():
    text = open(DOC).read()
    start = text.index(SECTION)
    end = text.index("\n## ", start + 3)
    return re.findall(r"```sh\n(.*?)```", text[start:end], re.S)


def with_ports(block, ports):
    return block.replace(":9096", f":{ports['sasl']}").replace(":9097", f":{ports['broker']}")


# Both brokers read the JWKS file again every second (the walk-through keeps
# Kafka's default, an hour), so a key written to the file is taken at once.
REFRESH = "sasl.oauthbearer.jwks.endpoint.refresh.ms=1000"


def with_refresh(block):
    return block.replace("\nsasl.oauthbearer.expected.audience", f"\n{REFRESH}\nsasl.oauthbearer.expected.audience")


def run_blocks(work, blocks, env=None):
    for i, block in enumerate(blocks, 1):
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env,
                           capture_output=True, text=True, timeout=90)
        log(f"doc block {i}: exit {r.returncode}")
        if r.returncode != 0:
            raise CheckFailed(f"docs/security.md OAUTHBEARER block {i} failed ({r.returncode}):\n{block}\n"
                              f"stdout: {r.stdout[-2000:]}\nstderr: {r.stderr[-2000:]}")


def run_doc(work, fjord_bin, ports):
    """The walk-through's blocks on Fjord; gives its SASL_PLAINTEXT address."""
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir)
    os.symlink(os.path.abspath(fjord_bin), os.path.join(bindir, "fjord"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
    run_blocks(work, [with_refresh(with_ports(b, ports)) for b in doc_blocks()], env)
    return f"127.0.0.1:{ports['sasl']}"


def doc_oauth_settings(work):
    """The `sasl.*` and `listener.name.*` lines of the walk-through's
    properties block, with $PWD as `work`."""
    block = next(b for b in doc_blocks() if "oauth.properties" in b)
    return [line.replace("$PWD", work) for line in block.splitlines()
            if line.startswith(("sasl.", "listener.name."))]


def start_kafka(work, ports):
    """Kafka 4.4 with the walk-through's OAUTHBEARER keys on the same file."""
    run_blocks(work, doc_blocks()[:1])  # the key and the JWKS file
    home = os.path.join(work, "kafka-home")
    jwks_url = f"file://{work}/jwks.json"
    env = dict(os.environ, KAFKA_PEER_HOME=home, KAFKA_PEER_PORT=str(ports["plain"]),
               KAFKA_PEER_CONTROLLER_PORT=str(ports["controller"]),
               KAFKA_PEER_JVM_OPTS=f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={jwks_url}")
    settings = [
        f"listeners=PLAINTEXT://127.0.0.1:{ports['plain']},CONTROLLER://127.0.0.1:{ports['controller']},"
        f"SASL_PLAINTEXT://127.0.0.1:{ports['sasl']}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{ports['plain']},SASL_PLAINTEXT://127.0.0.1:{ports['sasl']}",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "inter.broker.listener.name=PLAINTEXT",
        *doc_oauth_settings(work),
        REFRESH,
    ]
    r = subprocess.run([KAFKA, "start", *settings], env=env, capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        raise CheckFailed(f"Kafka did not start: {r.stderr[-3000:]}")
    return f"127.0.0.1:{ports['sasl']}", env


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed(key, kid, claims):
    """A compact JWS, RS256, signed with `key` (cryptography's RSA key)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    header = b64url(json.dumps({"alg": "RS256", "typ": "JWT", "kid": kid}).encode())
    payload = b64url(json.dumps(claims).encode())
    sig = key.sign(f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{payload}.{b64url(sig)}"


def client_checks(label, bootstrap, work):
    from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer,
                                 TopicPartition)
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    with open(os.path.join(work, "idp.key"), "rb") as fh:
        idp = load_pem_private_key(fh.read(), password=None)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def token(key=idp, **changes):
        now = int(time.time())
        claims = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now - 5, "exp": now + 300,
                  "scope": "kafka"}
        claims.update(changes)
        return signed(key, "idp-1", claims)

    def conf(tok, **extra):
        # The lifetime told to librdkafka is always ahead (it refuses to send
        # a token it believes expired); the broker decides by the claims.
        c = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
             "sasl.mechanism": "OAUTHBEARER", "broker.address.family": "v4",
             "oauth_cb": lambda _config: (tok, time.time() + 300, "alice", {})}
        c.update(extra)
        return c

    def attempt(tok):
        """Whether a client with `tok` gets Metadata; the errors it saw."""
        errors = []
        p = Producer(conf(tok, error_cb=errors.append, **{"socket.timeout.ms": 5000}))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            p.poll(0.2)
            if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
                return False, errors
            try:
                p.list_topics(timeout=1)
                return True, errors
            except KafkaException:
                pass
        return False, errors

    def refused(tok, what):
        ok, errors = attempt(tok)
        expect(not ok, f"{what}: the broker served a client with it")
        expect(any(e.code() == KafkaError._AUTHENTICATION for e in errors),
               f"{what}: no authentication error, saw {[str(e) for e in errors]}")

    def round_trip():
        tok = token()
        ok, errors = attempt(tok)
        expect(ok, f"a valid token was not served: {[str(e) for e in errors]}")
        topic = "oauth-" + label
        p = Producer(conf(tok, acks="all"))
        p.poll(0)
        for i in range(10):
            p.produce(topic, f"v{i}".encode())
        expect(p.flush(30) == 0, "not every record delivered")
        c = Consumer(conf(tok, **{"group.id": "oauth-check", "enable.auto.commit": False}))
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got, deadline = [], time.monotonic() + 30
        while len(got) < 10 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value().decode())
        c.close()
        expect(got == [f"v{i}" for i in range(10)], f"read back {got}")

    def signed_with_header(header, claims):
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
        h = b64url(json.dumps(header).encode())
        p = b64url(json.dumps(claims).encode())
        return f"{h}.{p}.{b64url(idp.sign(f'{h}.{p}'.encode(), padding.PKCS1v15(), hashes.SHA256()))}"

    def claims_table():
        """Rows probed on Kafka 4.4 with this setup: each token served or
        refused with an authentication error as Kafka does."""
        def claims(**changes):
            now = int(time.time())
            c = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now - 5, "exp": now + 300}
            c.update(changes)
            return {k: v for k, v in c.items() if v is not None}

        def tok(header=None, **changes):
            return signed_with_header(header or {"alg": "RS256", "kid": "idp-1"}, claims(**changes))

        now = lambda: int(time.time())  # noqa: E731  (each row made when it runs)
        rows = [
            ("no iat", False, lambda: tok(iat=None)),
            ("iat 200 s ahead", True, lambda: tok(iat=now() + 200)),
            ("iat after exp", False, lambda: tok(iat=now() + 400)),
            ("nbf 20 s ahead (within the skew)", True, lambda: tok(nbf=now() + 20)),
            ("nbf 40 s ahead", False, lambda: tok(nbf=now() + 40)),
            ("no kid, the one key", True, lambda: tok(header={"alg": "RS256"})),
            ("unknown kid", False, lambda: tok(header={"alg": "RS256", "kid": "nope"})),
            ("no sub", False, lambda: tok(sub=None)),
            ("blank sub", False, lambda: tok(sub="  ")),
            ("exp as text", False, lambda: tok(exp=str(now() + 300))),
            ("iat as text", False, lambda: tok(iat=str(now()))),
            ("aud list holding the audience", True, lambda: tok(aud=["x", AUDIENCE])),
            ("no aud", False, lambda: tok(aud=None)),
            ("no iss", False, lambda: tok(iss=None)),
            ("numeric scope", True, lambda: tok(scope=5)),
            ("fractional exp", True, lambda: tok(exp=now() + 300.5)),
        ]
        wrong = []
        for name, served, make in rows:
            ok, errors = attempt(make())
            authn = any(e.code() == KafkaError._AUTHENTICATION for e in errors)
            if served and not ok:
                wrong.append(f"{name}: refused ({[str(e) for e in errors]})")
            elif not served and (ok or not authn):
                wrong.append(f"{name}: {'served' if ok else 'no authentication error'}")
        # Past its exp by less than the skew: accepted with a session of no
        # time left (KIP-368), so nothing is served and no authentication
        # error is told either.
        ok, errors = attempt(tok(iat=now() - 100, exp=now() - 5))
        if ok or any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            wrong.append(f"exp 5 s ago (within the skew): {'served' if ok else 'authentication error'}")
        expect(not wrong, "; ".join(wrong))

    def new_key_in_the_file():
        """A token of a key not in the set is refused; once the key is
        written to the JWKS file it is served (the next read of the file)."""
        new = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        now = int(time.time())
        tok = signed(new, "idp-2", {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now,
                                   "exp": now + 600})
        refused(tok, "a key not in the set yet")
        jwks = os.path.join(work, "jwks.json")
        with open(jwks) as fh:
            keys = json.load(fh)["keys"]
        n = new.public_key().public_numbers().n
        keys.append({"kty": "RSA", "use": "sig", "alg": "RS256", "kid": "idp-2", "e": "AQAB",
                     "n": b64url(n.to_bytes((n.bit_length() + 7) // 8, "big"))})
        with open(jwks + ".tmp", "w") as fh:
            json.dump({"keys": keys}, fh)
        os.replace(jwks + ".tmp", jwks)
        deadline = time.monotonic() + 30
        while not attempt(tok)[0]:
            expect(time.monotonic() < deadline, "the key written to the JWKS file was never taken")
            time.sleep(0.5)
        expect(attempt(token())[0], "the first key is no longer served")

    def java_client():
        """The Java client's own login (OAuthBearerLoginCallbackHandler)
        with each token in a file of its own; Kafka 4.x clients read a token
        URL only when the JVM property lists it. The client checks the token
        itself before sending it (a non-blank `sub`, a numeric `exp`, not
        compared with the clock: an expired one is sent, with a logged error
        that it will not be refreshed), so every token here carries both and
        the refused ones are refused by the broker."""
        now = int(time.time())
        files = {}
        for name, tok in [("accepted", token(exp=now + 600)),
                          ("signed by another key", token(key=other, exp=now + 600)),
                          ("past its exp", token(iat=now - 600, exp=now - 120))]:
            files[name] = os.path.join(work, f"token-{len(files)}.jwt")
            with open(files[name], "w") as fh:
                fh.write(tok)
        urls = ",".join(f"file://{path}" for path in files.values())
        env = dict(os.environ, COMPAT_BROKER=label, COMPAT_OAUTH_SASL_PLAINTEXT=bootstrap,
                   COMPAT_OAUTH_TOKEN=files.pop("accepted"),
                   COMPAT_OAUTH_REFUSED=",".join(f"{name}:{path}" for name, path in files.items()),
                   COMPAT_JAVA_OPTS=f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={urls}")
        try:
            r = subprocess.run([JAVA, "--oauth"], env=env, capture_output=True, text=True, timeout=150, cwd=work)
        except subprocess.TimeoutExpired as e:
            raise CheckFailed(f"java.sh --oauth still running after 150 s: {e.stdout}")
        for line in r.stdout.splitlines():
            log("    " + line)
        expect(r.returncode == 0, f"java.sh --oauth exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")

    def unsigned():
        header = b64url(json.dumps({"alg": "none"}).encode())
        now = int(time.time())
        payload = b64url(json.dumps({"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now,
                                     "exp": now + 300}).encode())
        return f"{header}.{payload}."

    now = int(time.time())
    return run_checks(f"oauth ({label})", [
        ("a valid signed token produces and reads back", round_trip),
        ("a token signed by another key is refused", lambda: refused(token(key=other), "another key")),
        ("an expired token is refused",
         lambda: refused(token(iat=now - 600, exp=now - 120), "an expired token")),
        ("a token for another audience is refused", lambda: refused(token(aud="other"), "another audience")),
        ("a token from another issuer is refused",
         lambda: refused(token(iss="https://evil.example"), "another issuer")),
        ("an unsigned (alg none) token is refused", lambda: refused(unsigned(), "alg none")),
        ("the Java client with a token file produces and reads back; another key, expired refused",
         java_client),
        ("the claims table (iat, nbf, kid, sub, aud, iss, scope) as Kafka 4.4", claims_table),
        ("a key written to the JWKS file is taken at its next read", new_key_in_the_file),
    ], budget=400)


def main():
    brokers = sys.argv[1:] or ["fjord", "kafka"]
    fjord_bin = os.environ.get("FJORD_BIN", os.path.join(os.path.dirname(DOC), "..", "target", "debug",
                                                         "fjord"))
    # The Java client's jar, when not up to date (a Maven build).
    r = subprocess.run([JAVA, "--build"], capture_output=True, text=True, timeout=600)
    status = 0
    if r.returncode != 0:
        print(f"FAIL: java.sh --build: {r.stdout[-2000:]} {r.stderr[-2000:]}", file=sys.stderr, flush=True)
        status = 1
    for broker in brokers:
        work = tempfile.mkdtemp(prefix=f"fjord-oauth-{broker}-")
        ports = {k: free_port() for k in ("sasl", "broker", "plain", "controller")}
        env = None
        try:
            if broker == "fjord":
                bootstrap = run_doc(work, fjord_bin, ports)
            else:
                bootstrap, env = start_kafka(work, ports)
            status |= client_checks(broker, bootstrap, work)
        except CheckFailed as e:
            print(f"FAIL: {broker}: {e}", file=sys.stderr, flush=True)
            status = 1
        finally:
            stop_work(work, env)
    log("oauth: " + ("passed" if status == 0 else "FAILED"))
    return status


if __name__ == "__main__":
    sys.exit(main())
