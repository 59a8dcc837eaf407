#!/usr/bin/env python3
"""docs/security.md, run: its one-node walk-through on Fjord, then the same
client checks on Fjord and on Apache Kafka 4.4 configured the same way.

Usage: security.py [fjord|kafka ...]   (default: both; FJORD_BIN names the binary)

1. Every `sh` block of the section "One node, step by step" of
   docs/security.md runs, in order, in a fresh directory with `fjord` on the
   PATH and free ports in place of 9093 (SSL) and 9094 (SASL_SSL): the
   certificates, the properties, `fjord format --add-scram`, the start, and
   the kcat checks the page shows (a produce and read back over SCRAM, mutual
   TLS, a refused wrong password).
2. On that Fjord and on Kafka (scripts/peers/kafka with the same keys and
   `--add-scram`), with confluent-kafka and kafka-python:
   * SCRAM-SHA-512 produce and read back over SASL_SSL; a wrong password and
     an unknown user refused with the same error, a SASL_SSL client without
     the CA refused
   * AlterUserScramCredentials creates bob (SCRAM-SHA-256); Describe shows
     his mechanism and iterations; bob logs in; the tool kafka-configs
     (Kafka's own, `scripts/peers/kafka tool`) adds carol the same way
   * mutual TLS with a client certificate; without one refused
   * kafka-python over SASL_SSL SCRAM-SHA-512
   * the Java client, franz-go, Sarama and kafkajs, each in its runner's
     `--secure` mode (one process per client and broker): SCRAM-SHA-512 as
     admin and SCRAM-SHA-256 as bob over SASL_SSL with the test CA and host
     name verification, each producing records and reading them back
     exactly; a wrong password refused with the client's authentication
     error; SSL without a client certificate refused by the TLS handshake;
     mutual TLS with alice's certificate producing and reading back
Exits 0 when every check passes on every broker asked for.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from checks import CheckFailed, log, run_checks

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOC = os.path.join(ROOT, "docs", "security.md")
KAFKA = os.path.join(ROOT, "scripts", "peers", "kafka")
COMPAT = os.path.join(ROOT, "scripts", "compat")
# The runners' secured modes (COMPAT_SECURE_* in their environment).
SECURE_RUNNERS = [
    ("Java client", [os.path.join(COMPAT, "java.sh"), "--secure"]),
    ("franz-go", [os.path.join(ROOT, "target", "compat-go", "franz-go"), "--secure"]),
    ("Sarama", [os.path.join(ROOT, "target", "compat-go", "sarama"), "--secure"]),
    ("kafkajs", [os.path.join(COMPAT, "kafkajs.sh"), "--secure"]),
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def doc_blocks():
    text = open(DOC).read()
    start = text.index("## One node, step by step")
    end = text.index("## A cluster")
    return re.findall(r"```sh\n(.*?)```", text[start:end], re.S)


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def processes_in(cwd):
    """Pids of processes whose working directory is `cwd`."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{pid}/cwd") == cwd:
                out.append(int(pid))
        except OSError:
            pass
    return out


def stop_work(work, kafka_env):
    """Stops what a run started in `work`: the Kafka peer when `kafka_env`
    names it, then every process whose working directory is `work`; removes
    `work` unless KEEP_WORK is set."""
    if kafka_env is not None:
        subprocess.run([KAFKA, "stop"], env=kafka_env, capture_output=True, timeout=180)
    for pid in processes_in(work):
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    time.sleep(1)
    if os.environ.get("KEEP_WORK"):
        log(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


class Setup:
    """Where the brokers are and the files the clients use."""

    def __init__(self, work, ssl, sasl_ssl):
        self.work, self.ssl, self.sasl_ssl = work, ssl, sasl_ssl

    def f(self, name):
        return os.path.join(self.work, name)


def run_doc(work, fjord_bin, ports):
    """Runs the walk-through's blocks in `work`; gives the Fjord setup."""
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir)
    os.symlink(os.path.abspath(fjord_bin), os.path.join(bindir, "fjord"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
    for i, block in enumerate(doc_blocks(), 1):
        block = block.replace(":9093", f":{ports['ssl']}").replace(":9094", f":{ports['sasl_ssl']}")
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env,
                           capture_output=True, text=True, timeout=90)
        log(f"doc block {i}: exit {r.returncode}")
        if r.returncode != 0:
            raise CheckFailed(f"docs/security.md block {i} failed ({r.returncode}):\n{block}\n"
                              f"stdout: {r.stdout[-2000:]}\nstderr: {r.stderr[-2000:]}")
    return Setup(work, f"127.0.0.1:{ports['ssl']}", f"127.0.0.1:{ports['sasl_ssl']}")


def start_kafka(work, ports):
    """Kafka 4.4 with the walk-through's keys on the same files."""
    home = os.path.join(work, "kafka-home")
    env = dict(os.environ, KAFKA_PEER_HOME=home,
               KAFKA_PEER_PORT=str(ports["plain"]), KAFKA_PEER_CONTROLLER_PORT=str(ports["controller"]),
               KAFKA_PEER_ADD_SCRAM="SCRAM-SHA-512=[name=admin,password=admin-secret]")
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="admin" password="admin-secret";')
    settings = [
        f"listeners=PLAINTEXT://127.0.0.1:{ports['plain']},CONTROLLER://127.0.0.1:{ports['controller']},"
        f"SASL_SSL://127.0.0.1:{ports['sasl_ssl']},SSL://127.0.0.1:{ports['ssl']}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{ports['plain']},"
        f"SASL_SSL://127.0.0.1:{ports['sasl_ssl']},SSL://127.0.0.1:{ports['ssl']}",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={work}/broker-keystore.pem",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={work}/ca.pem",
        "listener.name.ssl.ssl.client.auth=required",
        "listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=(.*?),.*$/$1/,DEFAULT",
        "sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256",
        f"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config={jaas}",
        f"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config={jaas}",
        "super.users=User:admin",
    ]
    r = subprocess.run([KAFKA, "start", *settings], env=env, capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        raise CheckFailed(f"Kafka did not start: {r.stderr[-3000:]}")
    return Setup(work, f"127.0.0.1:{ports['ssl']}", f"127.0.0.1:{ports['sasl_ssl']}"), env


def client_checks(label, s):
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition, OFFSET_BEGINNING
    from confluent_kafka.admin import (AdminClient, NewTopic, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)

    def sasl(user, password, mech="SCRAM-SHA-512", **extra):
        c = {"bootstrap.servers": s.sasl_ssl, "security.protocol": "SASL_SSL",
             "ssl.ca.location": s.f("ca.pem"), "sasl.mechanism": mech,
             "sasl.username": user, "sasl.password": password, "broker.address.family": "v4"}
        c.update(extra)
        return c

    def connects(conf):
        a = AdminClient(dict(conf, **{"socket.timeout.ms": 5000}))
        try:
            a.list_topics(timeout=6)
            return True
        except KafkaException:
            return False

    def scram_round_trip():
        topic = "sec-" + label
        a = AdminClient(sasl("admin", "admin-secret"))
        f = a.create_topics([NewTopic(topic, 1, 1)])[topic]
        f.result(timeout=20)
        p = Producer(sasl("admin", "admin-secret", acks="all"))
        for i in range(20):
            p.produce(topic, f"v{i}".encode())
        expect(p.flush(20) == 0, "not every record delivered")
        c = Consumer(sasl("admin", "admin-secret", **{"group.id": "sec-check", "enable.auto.commit": False}))
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got, deadline = [], time.monotonic() + 20
        while len(got) < 20 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value().decode())
        c.close()
        expect(got == [f"v{i}" for i in range(20)], f"read back {got}")

    def refusals():
        expect(not connects(sasl("admin", "wrong")), "a wrong password connected")
        expect(not connects(sasl("nobody", "admin-secret")), "an unknown user connected")
        no_ca = sasl("admin", "admin-secret")
        del no_ca["ssl.ca.location"]
        no_ca["ssl.ca.location"] = s.f("alice.pem")  # not a CA of the broker
        expect(not connects(no_ca), "a client trusting another CA connected")

    def alter_and_describe():
        a = AdminClient(sasl("admin", "admin-secret"))
        up = UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                          b"bob-secret")
        for user, fut in a.alter_user_scram_credentials([up]).items():
            fut.result(timeout=20)
        desc = a.describe_user_scram_credentials(["bob"])
        info = desc["bob"].result(timeout=20)
        mechs = [(i.mechanism, i.iterations) for i in info.scram_credential_infos]
        expect(mechs == [(ScramMechanism.SCRAM_SHA_256, 4096)], f"described {mechs}")
        deadline = time.monotonic() + 20
        while not connects(sasl("bob", "bob-secret", mech="SCRAM-SHA-256")):
            expect(time.monotonic() < deadline, "bob cannot log in")
            time.sleep(0.5)

    def kafka_configs_tool():
        props = s.f("admin.properties")
        if not os.path.exists(props):
            with open(props, "w") as fh:
                fh.write("security.protocol=SASL_SSL\nssl.truststore.type=PEM\n"
                         f"ssl.truststore.location={s.f('ca.pem')}\nsasl.mechanism=SCRAM-SHA-512\n"
                         'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule '
                         'required username="admin" password="admin-secret";\n')
        r = subprocess.run([KAFKA, "tool", "kafka-configs", "--bootstrap-server", s.sasl_ssl,
                            "--command-config", props, "--alter", "--add-config",
                            "SCRAM-SHA-512=[password=carol-secret]", "--entity-type", "users",
                            "--entity-name", "carol"], capture_output=True, text=True, timeout=120,
                           cwd=s.work)
        expect(r.returncode == 0, f"kafka-configs: {r.stdout[-1000:]} {r.stderr[-1000:]}")
        deadline = time.monotonic() + 20
        while not connects(sasl("carol", "carol-secret")):
            expect(time.monotonic() < deadline, "carol cannot log in")
            time.sleep(0.5)

    def mutual_tls():
        base = {"bootstrap.servers": s.ssl, "security.protocol": "SSL", "ssl.ca.location": s.f("ca.pem"),
                "broker.address.family": "v4"}
        expect(connects(dict(base, **{"ssl.certificate.location": s.f("alice.pem"),
                                      "ssl.key.location": s.f("alice.key")})), "alice's certificate refused")
        expect(not connects(base), "no client certificate connected to ssl.client.auth=required")

    def kafka_python():
        from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KTP
        conf = dict(bootstrap_servers=s.sasl_ssl, security_protocol="SASL_SSL", ssl_cafile=s.f("ca.pem"),
                    sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="admin",
                    sasl_plain_password="admin-secret")
        topic = "sec-" + label
        p = KafkaProducer(acks="all", **conf)
        for i in range(5):
            p.send(topic, f"k{i}".encode()).get(timeout=20)
        p.close()
        c = KafkaConsumer(enable_auto_commit=False, consumer_timeout_ms=10000, **conf)
        c.assign([KTP(topic, 0)])
        c.seek_to_beginning()
        got = [m.value.decode() for m in c]
        c.close()
        expect(got[-5:] == [f"k{i}" for i in range(5)], f"kafka-python read {got[-5:]}")

    def secure_runner(cmd):
        env = dict(os.environ, COMPAT_BROKER=label, COMPAT_SECURE_SASL_SSL=s.sasl_ssl, COMPAT_SECURE_SSL=s.ssl,
                   COMPAT_SECURE_CA=s.f("ca.pem"), COMPAT_SECURE_CERT=s.f("alice.pem"),
                   COMPAT_SECURE_KEY=s.f("alice.key"),
                   # bob is alter_and_describe's SCRAM-SHA-256 user.
                   COMPAT_SECURE_SCRAM="SCRAM-SHA-512:admin:admin-secret,SCRAM-SHA-256:bob:bob-secret")
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=150, cwd=s.work)
        except subprocess.TimeoutExpired as e:
            raise CheckFailed(f"{os.path.basename(cmd[0])} --secure still running after 150 s: {e.stdout}")
        for line in r.stdout.splitlines():
            log("    " + line)
        expect(r.returncode == 0, f"{os.path.basename(cmd[0])} --secure exited {r.returncode}:\n"
                                  f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")

    return run_checks(f"security ({label})", [
        ("SCRAM-SHA-512 produce and read back over SASL_SSL", scram_round_trip),
        ("wrong password, unknown user, wrong CA refused", refusals),
        ("AlterUserScramCredentials and Describe, then the new user logs in", alter_and_describe),
        ("kafka-configs adds a SCRAM user", kafka_configs_tool),
        ("mutual TLS with and without a client certificate", mutual_tls),
        ("kafka-python over SASL_SSL SCRAM-SHA-512", kafka_python),
    ] + [(f"{name} over SASL_SSL SCRAM-SHA-512/256 and mutual TLS; a wrong password refused",
          lambda cmd=cmd: secure_runner(cmd)) for name, cmd in SECURE_RUNNERS], budget=400)


def main():
    brokers = sys.argv[1:] or ["fjord", "kafka"]
    fjord_bin = os.environ.get("FJORD_BIN", os.path.join(ROOT, "target", "debug", "fjord"))
    status = build_runners()
    for broker in brokers:
        work = tempfile.mkdtemp(prefix=f"fjord-security-{broker}-")
        ports = {k: free_port() for k in ("ssl", "sasl_ssl", "plain", "controller")}
        env = None
        try:
            if broker == "fjord":
                setup = run_doc(work, fjord_bin, ports)
            else:
                # The walk-through's files (certificates), then Kafka on them.
                run_doc_files_only(work)
                setup, env = start_kafka(work, ports)
            status |= client_checks(broker, setup)
        except CheckFailed as e:
            print(f"FAIL: {broker}: {e}", file=sys.stderr, flush=True)
            status = 1
        finally:
            stop_work(work, env)
    log("security: " + ("passed" if status == 0 else "FAILED"))
    return status


def build_runners():
    """The Go runners and the Java client's jar, when not up to date (both
    incremental); kafkajs comes from scripts/install-test-deps. Gives 0, or 1
    when a build failed (its runner's checks then fail too)."""
    status = 0
    for cmd in ([os.path.join(COMPAT, "go", "build.sh")], [os.path.join(COMPAT, "java.sh"), "--build"]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            print(f"FAIL: {' '.join(cmd)}: {r.stdout[-2000:]} {r.stderr[-2000:]}", file=sys.stderr, flush=True)
            status = 1
    return status


def run_doc_files_only(work):
    """The walk-through's first block (the certificates) alone."""
    block = doc_blocks()[0]
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise CheckFailed(f"certificates: {r.stderr[-2000:]}")


if __name__ == "__main__":
    sys.exit(main())
