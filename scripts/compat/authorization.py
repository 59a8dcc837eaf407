#!/usr/bin/env python3
"""docs/security.md's ACL walk-through, run: on Fjord, then on Apache Kafka
4.4 configured the same way, followed by the same client checks on both.

Usage: authorization.py [fjord|kafka ...]   (default: both; FJORD_BIN names the binary)

1. The `sh` blocks of the section "Who may do what: ACLs, step by step" of
   docs/security.md run in order in a fresh directory, with `fjord` on the
   PATH, `kafka-acls` and `kafka-configs` running Apache Kafka's own tools
   (scripts/peers/kafka tool), and a free port in place of 9095. On Kafka
   the broker is started by this script with the same keys instead of the
   block that starts Fjord; every other block runs unchanged.
2. Then, on each broker, with the walk-through's ACLs in place (alice a
   `--producer` of orders, bob a `--consumer` of orders in the group
   billing), clients must succeed or fail as Kafka's authorizer decides:
   confluent-kafka (librdkafka), Kafka's console producer and consumer
   (the Java client), and kcat; plus `--transactional-id`, `--remove`, and
   a prefixed DENY over an ALLOW. Each expectation holds on both brokers.
Exits 0 when every check passes on every broker asked for.
"""

import os
import re
import subprocess
import sys
import tempfile
import time

from checks import CheckFailed, log, run_checks
from security import free_port, stop_work

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOC = os.path.join(ROOT, "docs", "security.md")
KAFKA = os.path.join(ROOT, "scripts", "peers", "kafka")
START_MARK = "fjord serve --config authz.properties"


def doc_blocks():
    text = open(DOC).read()
    start = text.index("## Who may do what: ACLs, step by step")
    end = text.index("## ", start + 3)
    return re.findall(r"```sh\n(.*?)```", text[start:end], re.S)


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def tool_env(work, fjord_bin):
    """PATH with fjord and shims for Kafka's tools."""
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir, exist_ok=True)
    if fjord_bin:
        os.symlink(os.path.abspath(fjord_bin), os.path.join(bindir, "fjord"))
    for tool in ("kafka-acls", "kafka-configs"):
        path = os.path.join(bindir, tool)
        with open(path, "w") as fh:
            fh.write(f'#!/usr/bin/env bash\nexec "{KAFKA}" tool {tool} "$@"\n')
        os.chmod(path, 0o755)
    return dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])


def run_block(i, block, work, env, port):
    block = block.replace(":9095", f":{port}")
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env,
                       capture_output=True, text=True, timeout=180)
    log(f"doc block {i}: exit {r.returncode}")
    if r.returncode != 0:
        raise CheckFailed(f"docs/security.md ACL block {i} failed ({r.returncode}):\n{block}\n"
                          f"stdout: {r.stdout[-2000:]}\nstderr: {r.stderr[-2000:]}")


def start_kafka(work, port):
    """Kafka 4.4 with the walk-through's keys (plus the controller listener
    a Kafka node needs; its PLAINTEXT principal, User:ANONYMOUS, is what
    the node's own broker uses to reach it, so it is a super user too)."""
    home = os.path.join(work, "kafka-home")
    plain, controller = free_port(), free_port()
    env = dict(os.environ, KAFKA_PEER_HOME=home, KAFKA_PEER_PORT=str(plain),
               KAFKA_PEER_CONTROLLER_PORT=str(controller))
    props = dict(line.split("=", 1) for line in open(os.path.join(work, "authz.properties")).read().splitlines()
                 if "=" in line and not line.startswith(("node.id", "log.dirs")))
    # scripts/peers/kafka waits for its PLAINTEXT port to serve; the checks
    # use the SASL_PLAINTEXT one only.
    props["listeners"] = (f"SASL_PLAINTEXT://127.0.0.1:{port},PLAINTEXT://127.0.0.1:{plain},"
                          f"CONTROLLER://127.0.0.1:{controller}")
    props["advertised.listeners"] = f"SASL_PLAINTEXT://127.0.0.1:{port},PLAINTEXT://127.0.0.1:{plain}"
    props["listener.security.protocol.map"] = ("CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
                                               "SASL_PLAINTEXT:SASL_PLAINTEXT")
    props["super.users"] = "User:admin;User:ANONYMOUS"
    settings = [f"{k}={v}" for k, v in props.items()]
    r = subprocess.run([KAFKA, "start", *settings], env=env, capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        raise CheckFailed(f"Kafka did not start: {r.stderr[-3000:]}")
    return env


def run(broker, work, fjord_bin, port):
    """The walk-through on `broker`; gives the Kafka peer's env (or None)."""
    env = tool_env(work, fjord_bin if broker == "fjord" else None)
    kafka_env = None
    for i, block in enumerate(doc_blocks(), 1):
        if START_MARK in block:
            if broker == "kafka":
                kafka_env = start_kafka(work, port)
                log(f"doc block {i}: Apache Kafka started with the same keys instead")
                continue
        run_block(i, block, work, env, port)
    return env, kafka_env


def client_checks(label, work, env, port):
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    addr = f"127.0.0.1:{port}"

    def conf(user, **extra):
        c = {"bootstrap.servers": addr, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
             "sasl.username": user, "sasl.password": f"{user}-secret", "broker.address.family": "v4"}
        c.update(extra)
        return c

    def acls(*args):
        r = subprocess.run(["kafka-acls", "--bootstrap-server", addr, "--command-config", "admin.properties",
                            *args], cwd=work, env=env, capture_output=True, text=True, timeout=120)
        expect(r.returncode == 0, f"kafka-acls {' '.join(args)}: {r.stdout[-1000:]} {r.stderr[-1000:]}")
        return r.stdout

    def delivery_errors(user, topic, n, **extra):
        p = Producer(conf(user, **{"message.timeout.ms": 10000, **extra}))
        errs = []
        for i in range(n):
            p.produce(topic, f"{user}-{i}".encode(),
                      on_delivery=lambda err, msg: errs.append(err.code() if err else None))
        p.flush(30)
        return errs

    def tool(name, *args, stdin=None):
        return subprocess.run([KAFKA, "tool", name, *args], cwd=work, input=stdin, capture_output=True,
                              text=True, timeout=120)

    def setup_secret():
        a = AdminClient(conf("admin"))
        a.create_topics([NewTopic("secret", 1, 1)])["secret"].result(timeout=30)

    def producer_acl():
        errs = delivery_errors("alice", "orders", 3, **{"enable.idempotence": True, "acks": "all"})
        expect(errs == [None] * 3, f"alice's idempotent produce to orders: {errs}")
        errs = delivery_errors("alice", "secret", 1)
        expect(errs == [KafkaError.TOPIC_AUTHORIZATION_FAILED], f"alice's produce to secret: {errs}")

    def read_as(user, group, want):
        c = Consumer(conf(user, **{"group.id": group, "auto.offset.reset": "earliest",
                                   "enable.auto.commit": False}))
        c.subscribe(["orders"])
        got, err, deadline = 0, None, time.monotonic() + 30
        while got < want and err is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() != KafkaError._PARTITION_EOF:
                    err = m.error().code()
                continue
            got += 1
        if err is None and got:
            try:
                c.commit(asynchronous=False)
            except KafkaException as e:
                err = e.args[0].code()
        c.close()
        return got, err

    def consumer_acl():
        got, err = read_as("bob", "billing", 2)
        expect(err is None and got >= 2, f"bob in billing read {got}, error {err}")
        got, err = read_as("bob", "other-group", 1)
        expect(err == KafkaError.GROUP_AUTHORIZATION_FAILED, f"bob in other-group: read {got}, error {err}")
        errs = delivery_errors("bob", "orders", 1)
        expect(errs == [KafkaError.TOPIC_AUTHORIZATION_FAILED], f"bob's produce: {errs}")

    def transactional_acl():
        acls("--add", "--allow-principal", "User:alice", "--transactional-id", "tx-alice", "--producer",
             "--topic", "orders")
        p = Producer(conf("alice", **{"transactional.id": "tx-alice"}))
        p.init_transactions(30)
        p.begin_transaction()
        p.produce("orders", b"in-a-transaction")
        p.commit_transaction(30)
        other = Producer(conf("alice", **{"transactional.id": "tx-other"}))
        try:
            other.init_transactions(30)
            raise CheckFailed("init_transactions for tx-other succeeded")
        except KafkaException as e:
            code = e.args[0].code()
            expect(code == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, f"tx-other: {e}")

    def java_client():
        out = tool("kafka-console-producer", "--bootstrap-server", addr, "--command-config", "alice.properties",
                   "--topic", "orders", stdin="java-1\njava-2\n")
        expect(out.returncode == 0 and "Exception" not in out.stderr,
               f"console producer as alice: {out.returncode} {out.stderr[-1500:]}")
        out = tool("kafka-console-consumer", "--bootstrap-server", addr, "--command-config", "bob.properties",
                   "--topic", "orders", "--group", "billing", "--from-beginning", "--max-messages", "2",
                   "--timeout-ms", "30000")
        expect(out.returncode == 0 and "Processed a total of 2 messages" in out.stdout + out.stderr,
               f"console consumer as bob: {out.returncode} {out.stdout[-500:]} {out.stderr[-1500:]}")
        out = tool("kafka-console-producer", "--bootstrap-server", addr, "--command-config", "bob.properties",
                   "--topic", "orders", stdin="refused\n")
        # The Java producer is idempotent by default: bob, with no WRITE on
        # any topic, is refused its producer id (KAFKA-10619's rule).
        expect("ClusterAuthorizationException" in out.stderr,
               f"console producer as bob was not refused: {out.returncode} {out.stderr[-1500:]}")

    def idempotent_acl():
        # --producer --idempotent: WRITE, DESCRIBE, CREATE on bobs-topic and
        # IDEMPOTENT_WRITE on the cluster. bob's (idempotent) Java producer
        # then gets its producer id, and is refused orders per topic.
        acls("--add", "--allow-principal", "User:bob", "--producer", "--idempotent", "--topic", "bobs-topic")
        listed = acls("--list", "--cluster")
        expect("IDEMPOTENT_WRITE" in listed and "User:bob" in listed, f"the cluster's ACLs: {listed[-800:]}")
        out = tool("kafka-console-producer", "--bootstrap-server", addr, "--command-config", "bob.properties",
                   "--topic", "orders", stdin="refused\n")
        expect("TopicAuthorizationException" in out.stderr and "ClusterAuthorizationException" not in out.stderr,
               f"console producer as bob with IDEMPOTENT_WRITE: {out.returncode} {out.stderr[-1500:]}")
        acls("--remove", "--force", "--allow-principal", "User:bob", "--producer", "--idempotent",
             "--topic", "bobs-topic")

    def kcat_listing():
        args = ["-b", addr, "-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanism=PLAIN",
                "-X", "sasl.username=bob", "-X", "sasl.password=bob-secret", "-L"]
        out = subprocess.run(["kcat", *args], capture_output=True, text=True, timeout=60)
        expect(out.returncode == 0, f"kcat -L as bob: {out.stderr[-500:]}")
        topics = re.findall(r'topic "([^"]+)"', out.stdout)
        expect(topics == ["orders"], f"bob sees {topics}")

    def deny_over_allow():
        acls("--add", "--deny-principal", "User:alice", "--operation", "Write", "--topic", "ord",
             "--resource-pattern-type", "prefixed")
        errs = delivery_errors("alice", "orders", 1)
        expect(errs == [KafkaError.TOPIC_AUTHORIZATION_FAILED], f"alice under a prefixed DENY: {errs}")
        acls("--remove", "--force", "--deny-principal", "User:alice", "--operation", "Write", "--topic", "ord",
             "--resource-pattern-type", "prefixed")
        errs = delivery_errors("alice", "orders", 1)
        expect(errs == [None], f"alice once the DENY is removed: {errs}")

    def removal():
        acls("--remove", "--force", "--allow-principal", "User:bob", "--consumer", "--topic", "orders",
             "--group", "billing")
        got, err = read_as("bob", "billing", 1)
        expect(err in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED),
               f"bob after --remove: read {got}, error {err}")

    return run_checks(f"authorization ({label})", [
        ("a topic only the super user may touch", setup_secret),
        ("--producer: alice writes orders (idempotent too), not secret", producer_acl),
        ("--consumer: bob reads orders in billing only, may not write", consumer_acl),
        ("--transactional-id: alice's transactions with tx-alice only", transactional_acl),
        ("the Java client (console tools) as alice and bob", java_client),
        ("--idempotent: bob's producer id, then orders refused per topic", idempotent_acl),
        ("kcat -L as bob lists only what he may describe", kcat_listing),
        ("a prefixed DENY wins over the ALLOW, then is removed", deny_over_allow),
        ("--remove takes bob's rights away", removal),
    ], budget=420)


def main():
    brokers = sys.argv[1:] or ["fjord", "kafka"]
    fjord_bin = os.environ.get("FJORD_BIN", os.path.join(ROOT, "target", "debug", "fjord"))
    status = 0
    for broker in brokers:
        work = tempfile.mkdtemp(prefix=f"fjord-authz-{broker}-")
        port = free_port()
        kafka_env = None
        try:
            env, kafka_env = run(broker, work, fjord_bin, port)
            status |= client_checks(broker, work, env, port)
        except CheckFailed as e:
            print(f"FAIL: {broker}: {e}", file=sys.stderr, flush=True)
            status = 1
        finally:
            stop_work(work, kafka_env)
    log("authorization: " + ("passed" if status == 0 else "FAILED"))
    return status


if __name__ == "__main__":
    sys.exit(main())
