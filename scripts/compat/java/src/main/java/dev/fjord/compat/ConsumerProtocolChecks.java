package dev.fjord.compat;

import static dev.fjord.compat.GroupChecks.POLL;
import static dev.fjord.compat.GroupChecks.WAIT;
import static dev.fjord.compat.GroupChecks.describeGroup;
import static dev.fjord.compat.GroupChecks.expect;
import static dev.fjord.compat.GroupChecks.membersByInstance;
import static dev.fjord.compat.GroupChecks.pollAll;
import static dev.fjord.compat.GroupChecks.produce;
import static dev.fjord.compat.Support.check;
import static dev.fjord.compat.Support.eq;
import static dev.fjord.compat.Support.get;
import static dev.fjord.compat.Support.partitions;
import static dev.fjord.compat.Support.sorted;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnsupportedAssignorException;

import dev.fjord.compat.GroupChecks.Member;
import dev.fjord.compat.Support.CheckFailed;
import dev.fjord.compat.Support.Ctx;

/**
 * The consumer group protocol (KIP-848, group.protocol=consumer) with the Java
 * client: the broker's range assignor, static members, a broker-side regex
 * subscription, revocation before assignment under load, and an unknown
 * assignor refused. Each runs unchanged against Fjord and Kafka 4.4.
 */
final class ConsumerProtocolChecks {
    private ConsumerProtocolChecks() {}

    static Map<String, Object> consumerProtocol(String assignor, Map<String, Object> more) {
        Map<String, Object> m = new HashMap<>(more);
        m.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        if (assignor != null) {
            m.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
        }
        return m;
    }

    static ConsumerGroupDescription describeConsumerGroup(Ctx ctx, String group) {
        ConsumerGroupDescription d = describeGroup(ctx, group);
        eq(GroupType.CONSUMER, d.type(), "type of group " + group);
        return d;
    }

    /**
     * group.remote.assignor=range: the shared run of GroupChecks.assignor
     * (join, handover on leave, exactly once, commits), and on the join the
     * layout of Kafka's range assignor: each member a contiguous range of
     * three partitions, described as assignor "range" of a consumer group.
     */
    static String range(Ctx ctx) {
        String summary = GroupChecks.assignor(ctx, "consumer-range");
        return summary + "; range layout " + GroupChecks.lastRangeLayout;
    }

    /** The partitions of a range assignor split of 0..n-1 over two members: two contiguous halves. */
    static void checkRangeLayout(Set<TopicPartition> a, Set<TopicPartition> b, int parts) {
        List<Integer> pa = new ArrayList<>(new TreeSet<>(a.stream().map(TopicPartition::partition).toList()));
        List<Integer> pb = new ArrayList<>(new TreeSet<>(b.stream().map(TopicPartition::partition).toList()));
        List<Integer> low = new ArrayList<>();
        List<Integer> high = new ArrayList<>();
        for (int p = 0; p < parts; p++) {
            (p < parts / 2 ? low : high).add(p);
        }
        check((pa.equals(low) && pb.equals(high)) || (pa.equals(high) && pb.equals(low)),
                "range layout: a owns %s, b owns %s; want %s and %s", pa, pb, low, high);
        GroupChecks.lastRangeLayout = "a " + pa + " b " + pb;
    }

    /**
     * Static members (group.instance.id) on the consumer group protocol: a
     * member closed without leaving (the client's default for a static
     * member: member epoch -2) and restarted with the same instance id within
     * the session timeout gets its partitions back, resumes at its committed
     * offsets, and the other member sees no rebalance; the group epoch does
     * not move.
     */
    static String staticMembers(Ctx ctx) {
        int parts = 4;
        String topic = ctx.name("cp-static");
        String group = ctx.name("cp-static");
        ctx.createTopic(topic, parts, null);
        Set<TopicPartition> all = new HashSet<>(partitions(topic, parts));
        String id1 = "s1-" + ctx.runId;
        String id2 = "s2-" + ctx.runId;
        List<Member> open = new ArrayList<>();
        try {
            Member s1 = staticMember(ctx, group, topic, id1, "s1", open);
            Support.waitUntil("the first static member owns every partition", WAIT, () -> {
                s1.poll();
                return s1.owned.equals(all);
            }, s1::toString);
            Member s2 = staticMember(ctx, group, topic, id2, "s2", open);
            Support.waitUntil("two static members share the partitions", WAIT, () -> {
                pollAll(List.of(s1, s2));
                return split(s1, s2, all);
            }, () -> s1 + " " + s2);
            produce(ctx, topic, parts, 10, "before");
            Support.waitUntil("the first batch is consumed", WAIT, () -> {
                pollAll(List.of(s1, s2));
                return s1.consumed.size() + s2.consumed.size() >= parts * 10;
            }, () -> s1 + " " + s2);
            Support.waitUntil("the group is Stable with both static members", WAIT, () -> {
                ConsumerGroupDescription d = describeConsumerGroup(ctx, group);
                return d.groupState() == GroupState.STABLE && d.members().size() == 2;
            }, () -> describeGroup(ctx, group).toString());

            ConsumerGroupDescription before = describeConsumerGroup(ctx, group);
            eq(Set.of(id1, id2), membersByInstance(before).keySet(), "instance ids in the group");
            Set<TopicPartition> s1Owned = new HashSet<>(s1.owned);
            Set<TopicPartition> s2Owned = new HashSet<>(s2.owned);
            int s2Assigned = s2.assignedCalls;
            int s2Revoked = s2.revokedCalls;
            int s2Epoch = s2.generation();

            s1.close();
            // Closed without leaving: the broker keeps s1's assignment for the session timeout.
            ConsumerGroupDescription during = describeConsumerGroup(ctx, group);
            eq(Set.of(id1, id2), membersByInstance(during).keySet(), "instance ids after the static member closed");

            Member back = staticMember(ctx, group, topic, id1, "s1'", open);
            Support.waitUntil("the static member that came back has its partitions", WAIT, () -> {
                pollAll(List.of(back, s2));
                return back.owned.equals(s1Owned);
            }, () -> back + " " + s2);
            int backBefore = back.consumed.size();
            int s2Before = s2.consumed.size();
            produce(ctx, topic, parts, 10, "after");
            long observeUntil = System.nanoTime() + Duration.ofSeconds(2).toNanos();
            Support.waitUntil("both members consumed the new records", WAIT, () -> {
                pollAll(List.of(back, s2));
                return back.consumed.size() - backBefore >= s1Owned.size() * 10
                        && s2.consumed.size() - s2Before >= s2Owned.size() * 10 && System.nanoTime() > observeUntil;
            }, () -> back + " " + s2);

            List<String> wrong = new ArrayList<>();
            expect(wrong, s1Owned.size() * 10, back.consumed.size() - backBefore,
                    "records the restarted member consumed (resumed at the committed offsets)");
            for (ConsumerRecord<String, String> r : back.consumed) {
                if (!r.value().startsWith("after")) {
                    wrong.add("the restarted member re-read " + Support.show(r));
                    break;
                }
            }
            expect(wrong, s2Assigned, s2.assignedCalls, "onPartitionsAssigned calls of the other member");
            expect(wrong, s2Revoked, s2.revokedCalls, "onPartitionsRevoked calls of the other member");
            expect(wrong, s2Owned, s2.owned, "partitions of the other member");
            expect(wrong, s2Epoch, s2.generation(), "member epoch of the other member");
            ConsumerGroupDescription after = describeConsumerGroup(ctx, group);
            expect(wrong, GroupState.STABLE, after.groupState(), "group state after the static member came back");
            expect(wrong, back.memberId(), membersByInstance(after).get(id1), "member id of the restarted member");
            expect(wrong, 2, after.members().size(), "members after the static member came back");
            expect(wrong, before.groupEpoch(), after.groupEpoch(), "group epoch (no rebalance)");
            if (!wrong.isEmpty()) {
                throw new CheckFailed(String.join("; ", wrong));
            }
            back.closeAndLeave();
            s2.closeAndLeave();
            Support.waitUntil("the group is Empty after both static members left", WAIT, () -> {
                ConsumerGroupDescription d = describeConsumerGroup(ctx, group);
                return d.groupState() == GroupState.EMPTY && d.members().isEmpty();
            }, () -> describeGroup(ctx, group).toString());
            return "static s1 " + sorted(s1Owned) + " closed and came back with its instance id: same partitions, "
                    + "resumed at the committed offsets, the other member kept " + sorted(s2Owned)
                    + " at epoch " + s2Epoch + " with no callback, group epoch " + after.groupEpoch().orElse(-1)
                    + " unchanged; close(LEAVE_GROUP) of both emptied the group";
        } finally {
            for (Member m : open) {
                m.close();
            }
        }
    }

    static Member staticMember(Ctx ctx, String group, String topic, String instanceId, String name,
            List<Member> open) {
        Member m = new Member(name, ctx.consumer(group,
                consumerProtocol(null, Map.of(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId))));
        open.add(m);
        m.subscribe(topic);
        return m;
    }

    static boolean split(Member a, Member b, Set<TopicPartition> all) {
        Set<TopicPartition> union = new HashSet<>(a.owned);
        union.addAll(b.owned);
        return !a.owned.isEmpty() && !b.owned.isEmpty() && union.equals(all)
                && a.owned.size() + b.owned.size() == all.size();
    }

    /**
     * A broker-side regex subscription (SubscriptionPattern, RE2J syntax): the
     * member gets the partitions of the matching topic that exists when it
     * joins, and then those of a matching topic created after it joined, but
     * never those of a topic that does not match.
     */
    static String regex(Ctx ctx) {
        String first = ctx.name("cp-rx-one");
        String later = ctx.name("cp-rx-two");
        String other = ctx.name("cp-rx-no");
        String group = ctx.name("cp-rx");
        ctx.createTopic(first, 2, null);
        ctx.createTopic(other, 1, null);
        String pattern = "jc-cp-rx-(one|two)-" + ctx.runId;
        Member m = new Member("rx", ctx.consumer(group, consumerProtocol(null, Map.of())));
        try {
            m.consumer.subscribe(new SubscriptionPattern(pattern), m);
            Set<TopicPartition> firstOnly = new HashSet<>(partitions(first, 2));
            Support.waitUntil("the member owns the matching topic's partitions", WAIT, () -> {
                m.poll();
                return m.owned.equals(firstOnly);
            }, m::toString);
            long t0 = System.nanoTime();
            ctx.createTopic(later, 3, null);
            Set<TopicPartition> both = new HashSet<>(firstOnly);
            both.addAll(partitions(later, 3));
            Support.waitUntil("the member owns the partitions of the matching topic created after it joined",
                    Duration.ofSeconds(45), () -> {
                        m.poll();
                        return m.owned.equals(both);
                    }, m::toString);
            long tookMs = (System.nanoTime() - t0) / 1_000_000;
            produce(ctx, later, 3, 5, "later");
            produce(ctx, other, 1, 5, "other");
            Support.waitUntil("the member consumed the new topic's records", WAIT, () -> {
                m.poll();
                return m.consumed.size() >= 15;
            }, m::toString);
            for (ConsumerRecord<String, String> r : m.consumed) {
                check(r.topic().equals(later), "consumed %s from %s", Support.show(r), r.topic());
            }
            ConsumerGroupDescription d = describeConsumerGroup(ctx, group);
            eq(1, d.members().size(), "members");
            eq(both, d.members().iterator().next().assignment().topicPartitions(), "described assignment");
            m.closeAndLeave();
            return "SubscriptionPattern " + pattern + ": " + sorted(firstOnly) + " on join, all " + both.size()
                    + " partitions " + tookMs + " ms after " + later + " was created; " + other + " never assigned";
        } finally {
            m.close();
        }
    }

    /** Member that records, on one clock shared by all members, when each partition was revoked or assigned. */
    static final class Timed extends Member {
        final AtomicLong clock;
        final Map<TopicPartition, Long> revokedAt = new HashMap<>();
        final Map<TopicPartition, Long> assignedAt = new HashMap<>();

        Timed(String name, KafkaConsumer<String, String> consumer, AtomicLong clock) {
            super(name, consumer);
            this.clock = clock;
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            super.onPartitionsRevoked(partitions);
            long t = clock.incrementAndGet();
            partitions.forEach(tp -> revokedAt.put(tp, t));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            long t = clock.incrementAndGet();
            partitions.forEach(tp -> assignedAt.put(tp, t));
            super.onPartitionsAssigned(partitions);
        }
    }

    /**
     * Revocation before assignment under load: a producer writes to all six
     * partitions without pause while a second member joins. The first member
     * commits in onPartitionsRevoked; the second is assigned each moved
     * partition only after the first gave it up, and starts at the committed
     * offset: no record is consumed twice, none is lost.
     */
    static String revocationUnderLoad(Ctx ctx) {
        int parts = 6;
        String topic = ctx.name("cp-load");
        String group = ctx.name("cp-load");
        ctx.createTopic(topic, parts, null);
        Set<TopicPartition> all = new HashSet<>(partitions(topic, parts));
        AtomicLong clock = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> producerFailure = new AtomicReference<>();
        Map<Integer, Long> produced = new HashMap<>();
        Map<String, Object> extra = consumerProtocol("uniform", Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50"));
        Timed a = new Timed("a", ctx.consumer(group, extra), clock);
        Timed b = new Timed("b", ctx.consumer(group, extra), clock);
        Thread producer = new Thread(() -> {
            try (KafkaProducer<String, String> p = ctx.producer(Map.of(
                    org.apache.kafka.clients.producer.ProducerConfig.LINGER_MS_CONFIG, "5"))) {
                long i = 0;
                while (!stop.get()) {
                    for (int part = 0; part < parts; part++) {
                        p.send(new ProducerRecord<>(topic, part, "k" + i, "load-" + part + "-" + i));
                        synchronized (produced) {
                            produced.merge(part, 1L, Long::sum);
                        }
                    }
                    i++;
                    if (i % 20 == 0) {
                        p.flush();
                        Thread.sleep(20);
                    }
                }
                p.flush();
            } catch (Throwable t) {
                producerFailure.set(t);
            }
        }, "load-producer");
        try {
            a.subscribe(topic);
            Support.waitUntil("the first member owns all six partitions", WAIT, () -> {
                a.poll();
                return a.owned.equals(all);
            }, a::toString);
            producer.start();
            Support.waitUntil("the first member is consuming the load", WAIT, () -> {
                a.poll();
                return a.consumed.size() >= 300;
            }, a::toString);
            b.subscribe(topic);
            Support.waitUntil("the second member joined under load and the two split the partitions", WAIT, () -> {
                pollAll(List.of(a, b));
                return split(a, b, all);
            }, () -> a + " " + b);
            int bAtSplit = b.consumed.size();
            Support.waitUntil("the second member consumes the load", WAIT, () -> {
                pollAll(List.of(a, b));
                return b.consumed.size() >= bAtSplit + 100;
            }, () -> a + " " + b);
            stop.set(true);
            producer.join(30_000);
            check(!producer.isAlive(), "the load producer did not stop");
            if (producerFailure.get() != null) {
                throw new CheckFailed("load producer: " + Support.describe(producerFailure.get()));
            }
            Map<Integer, Long> end = new HashMap<>();
            synchronized (produced) {
                end.putAll(produced);
            }
            Support.waitUntil("the group consumed every record produced", WAIT, () -> {
                pollAll(List.of(a, b));
                for (TopicPartition tp : all) {
                    long wantNext = end.get(tp.partition());
                    Member owner = a.owned.contains(tp) ? a : b;
                    if (!Long.valueOf(wantNext).equals(owner.next.get(tp))) {
                        return false;
                    }
                }
                return true;
            }, () -> a + " " + b + " end " + end);

            List<String> every = new ArrayList<>(a.consumedPositions);
            every.addAll(b.consumedPositions);
            Set<String> distinct = new HashSet<>(every);
            check(distinct.size() == every.size(), "records consumed twice: %d consumed, %d distinct", every.size(),
                    distinct.size());
            long total = end.values().stream().mapToLong(Long::longValue).sum();
            eq(total, (long) every.size(), "records consumed by the group (produced " + end + ")");
            Set<TopicPartition> moved = new HashSet<>(b.owned);
            check(!a.revokedAt.isEmpty(), "the first member had no revocation callback: %s", a);
            for (TopicPartition tp : moved) {
                Long revoked = a.revokedAt.get(tp);
                Long assigned = b.assignedAt.get(tp);
                check(revoked != null && assigned != null && revoked < assigned,
                        "%s: revoked from a at %s, assigned to b at %s (want revocation first)", tp, revoked, assigned);
            }
            eq(0, a.lostCalls + b.lostCalls, "onPartitionsLost calls");
            a.close();
            b.close();
            Map<TopicPartition, OffsetAndMetadata> offsets = get(
                    ctx.admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata(),
                    "listConsumerGroupOffsets");
            for (TopicPartition tp : all) {
                check(offsets.get(tp) != null, "no committed offset for %s", tp);
                eq(end.get(tp.partition()), offsets.get(tp).offset(), "committed offset of " + tp);
            }
            return total + " records produced under load, " + sorted(moved) + " revoked from a (committed) before "
                    + "b was assigned them; every record consumed exactly once; committed = log end";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CheckFailed("interrupted");
        } finally {
            stop.set(true);
            a.close();
            b.close();
        }
    }

    /** group.remote.assignor naming no assignor of the broker: poll() throws UnsupportedAssignorException. */
    static String unknownAssignor(Ctx ctx) {
        String topic = ctx.name("cp-noassignor");
        String group = ctx.name("cp-noassignor");
        ctx.createTopic(topic, 1, null);
        try (KafkaConsumer<String, String> c = ctx.consumer(group, consumerProtocol("no-such-assignor", Map.of()))) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (System.nanoTime() < deadline) {
                try {
                    c.poll(POLL);
                } catch (UnsupportedAssignorException e) {
                    check(c.assignment().isEmpty(), "assignment %s after the refusal", c.assignment());
                    return "group.remote.assignor=no-such-assignor: poll() threw UnsupportedAssignorException ("
                            + e.getMessage() + ")";
                }
            }
            throw new CheckFailed("no UnsupportedAssignorException within " + WAIT.toSeconds() + "s; assignment "
                    + c.assignment());
        }
    }

    /**
     * Online migration (group.consumer.migration.policy, bidirectional by
     * default) as a rolling upgrade does it: a classic member (the client's
     * default protocol and assignors) consumes every partition; a member with
     * group.protocol=consumer joins and converts the live group, the two
     * share the partitions while records keep coming, no record is consumed
     * twice; the consumer-protocol member leaves, the group turns classic
     * again and the classic member takes every partition back.
     */
    static String migration(Ctx ctx) {
        int parts = 6;
        String topic = ctx.name("cp-migrate");
        String group = ctx.name("cp-migrate");
        ctx.createTopic(topic, parts, null);
        Set<TopicPartition> all = new HashSet<>(partitions(topic, parts));
        Member classic = new Member("classic", ctx.consumer(group, Map.of()));
        Member modern = null;
        try {
            classic.subscribe(topic);
            produce(ctx, topic, parts, 10, "before");
            Support.waitUntil("the classic member owns every partition and read the first batch", WAIT, () -> {
                classic.poll();
                return classic.owned.equals(all) && classic.consumed.size() >= parts * 10;
            }, classic::toString);
            eq(GroupType.CLASSIC, describeGroup(ctx, group).type(), "type of the group before the upgrade");

            Member m = new Member("consumer", ctx.consumer(group, consumerProtocol(null, Map.of())));
            modern = m;
            m.subscribe(topic);
            Support.waitUntil("the classic and the consumer-protocol member share the partitions", WAIT, () -> {
                pollAll(List.of(classic, m));
                return split(classic, m, all);
            }, () -> classic + " " + m);
            ConsumerGroupDescription upgraded = describeConsumerGroup(ctx, group);
            eq(2, upgraded.members().size(), "members of the upgraded group");
            produce(ctx, topic, parts, 10, "during");
            Support.waitUntil("both batches are consumed", WAIT, () -> {
                pollAll(List.of(classic, m));
                return classic.consumed.size() + m.consumed.size() >= 2 * parts * 10;
            }, () -> classic + " " + m);

            m.close();
            modern = null;
            Support.waitUntil("the classic member takes every partition back in a classic group", WAIT, () -> {
                classic.poll();
                return classic.owned.equals(all) && describeGroup(ctx, group).type() == GroupType.CLASSIC;
            }, () -> classic + " " + describeGroup(ctx, group));
            produce(ctx, topic, parts, 10, "after");
            Support.waitUntil("the last batch is consumed", WAIT, () -> {
                classic.poll();
                return classic.consumed.size() + m.consumed.size() >= 3 * parts * 10;
            }, classic::toString);
            List<String> positions = new ArrayList<>(classic.consumedPositions);
            positions.addAll(m.consumedPositions);
            eq(positions.size(), new HashSet<>(positions).size(), "records consumed twice");
            eq(3 * parts * 10, positions.size(), "records consumed");
            // Every partition's committed offset is its log end: commits made
            // in either kind of group were kept through both conversions.
            classic.commit(all);
            Map<TopicPartition, OffsetAndMetadata> offsets = get(
                    ctx.admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata(),
                    "listConsumerGroupOffsets");
            for (TopicPartition tp : all) {
                check(offsets.get(tp) != null, "no committed offset for %s", tp);
                eq(30L, offsets.get(tp).offset(), "committed offset of " + tp);
            }
            return "classic -> consumer (" + sorted(upgradedOwned(upgraded)) + ") -> classic, "
                    + positions.size() + " records once each, committed = log end";
        } finally {
            if (modern != null) {
                modern.close();
            }
            classic.close();
        }
    }

    private static List<String> upgradedOwned(ConsumerGroupDescription d) {
        List<String> out = new ArrayList<>();
        d.members().forEach(mem -> out.add(String.valueOf(mem.assignment().topicPartitions().size())));
        return out;
    }
}
