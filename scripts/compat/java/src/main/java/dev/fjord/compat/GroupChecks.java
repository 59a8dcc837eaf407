package dev.fjord.compat;

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

import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;

import dev.fjord.compat.Support.CheckFailed;
import dev.fjord.compat.Support.Ctx;

/** Checks 2 and 3: classic-protocol consumer groups with every assignor, and static membership. */
final class GroupChecks {
    private GroupChecks() {}

    static final Duration WAIT = Duration.ofSeconds(30);
    /** The split of the last consumer-range run of assignor(), for its summary line. */
    static String lastRangeLayout = "";
    static final Duration POLL = Duration.ofMillis(100);

    /**
     * One group member: tracks its assignment through the rebalance listener,
     * records what it consumed, and commits what it consumed after every poll
     * and, for partitions it gives away, in onPartitionsRevoked.
     */
    static class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final Set<TopicPartition> owned = new HashSet<>();
        /** Every record consumed, as partition@offset, in order. */
        final List<String> consumedPositions = new ArrayList<>();
        final List<ConsumerRecord<String, String>> consumed = new ArrayList<>();
        final Map<TopicPartition, Long> next = new HashMap<>();
        final Map<TopicPartition, Long> committed = new HashMap<>();
        int assignedCalls;
        int revokedCalls;
        int lostCalls;
        boolean closed;

        Member(String name, KafkaConsumer<String, String> consumer) {
            this.name = name;
            this.consumer = consumer;
        }

        void subscribe(String topic) {
            consumer.subscribe(List.of(topic), this);
        }

        int poll() {
            int n = 0;
            for (ConsumerRecord<String, String> r : consumer.poll(POLL)) {
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                if (!owned.contains(tp)) {
                    throw new CheckFailed(name + " got " + Support.show(r) + " from a partition it does not own " + owned);
                }
                consumed.add(r);
                consumedPositions.add(r.partition() + "@" + r.offset());
                next.put(tp, r.offset() + 1);
                n++;
            }
            if (n > 0) {
                try {
                    commit(owned);
                } catch (RebalanceInProgressException e) {
                    // The revocation callback commits what was consumed from partitions given away.
                }
            }
            return n;
        }

        void commit(Collection<TopicPartition> tps) {
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (TopicPartition tp : tps) {
                Long n = next.get(tp);
                if (n != null && !n.equals(committed.get(tp))) {
                    offsets.put(tp, new OffsetAndMetadata(n));
                }
            }
            if (!offsets.isEmpty()) {
                consumer.commitSync(offsets);
                offsets.forEach((tp, om) -> committed.put(tp, om.offset()));
            }
        }

        int generation() {
            return consumer.groupMetadata().generationId();
        }

        String memberId() {
            return consumer.groupMetadata().memberId();
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            revokedCalls++;
            commit(partitions);
            owned.removeAll(partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            assignedCalls++;
            owned.addAll(partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            lostCalls++;
            owned.removeAll(partitions);
        }

        void close() {
            if (!closed) {
                closed = true;
                consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
            }
        }

        void closeAndLeave() {
            if (!closed) {
                closed = true;
                consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                        .withTimeout(Duration.ofSeconds(10)));
            }
        }

        @Override
        public String toString() {
            return name + "{gen " + (closed ? "closed" : generation()) + ", owns " + sorted(owned) + ", consumed "
                    + consumed.size() + ", assigned/revoked/lost calls " + assignedCalls + "/" + revokedCalls + "/"
                    + lostCalls + "}";
        }
    }

    static String assignorClass(String assignor) {
        return switch (assignor) {
            case "range" -> RangeAssignor.class.getName();
            case "roundrobin" -> RoundRobinAssignor.class.getName();
            case "sticky" -> StickyAssignor.class.getName();
            case "cooperative-sticky" -> CooperativeStickyAssignor.class.getName();
            default -> throw new IllegalArgumentException(assignor);
        };
    }

    static void pollAll(List<Member> members) {
        for (Member m : members) {
            m.poll();
        }
    }

    /** Both members own disjoint, non-empty sets covering every partition, at the same generation. */
    static boolean settled(Member a, Member b, Set<TopicPartition> all) {
        Set<TopicPartition> union = new HashSet<>(a.owned);
        union.addAll(b.owned);
        return !a.owned.isEmpty() && !b.owned.isEmpty() && union.equals(all)
                && a.owned.size() + b.owned.size() == all.size() && a.generation() == b.generation()
                && a.generation() > 0;
    }

    static void produce(Ctx ctx, String topic, int parts, int perPartition, String tag) {
        try (KafkaProducer<String, String> p = ctx.producer(Map.of())) {
            List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < perPartition; i++) {
                for (int part = 0; part < parts; part++) {
                    fs.add(p.send(new ProducerRecord<>(topic, part, "k" + i, tag + "-" + part + "-" + i)));
                }
            }
            p.flush();
            for (java.util.concurrent.Future<?> f : fs) {
                get(f, "send to " + topic);
            }
        }
    }

    /**
     * Two members of one group over six partitions with the given assignor:
     * every partition assigned exactly once; the second member leaves part-way
     * through a batch and the first takes over at its committed offsets.
     */
    static String assignor(Ctx ctx, String assignor) {
        int parts = 6;
        int perBatch = 50;
        String topic = ctx.name("grp-" + assignor);
        String group = ctx.name("grp-" + assignor);
        ctx.createTopic(topic, parts, null);
        Set<TopicPartition> all = new HashSet<>(partitions(topic, parts));
        // "consumer-<name>": the consumer group protocol (KIP-848), the
        // broker assigning with its assignor <name>; otherwise the classic
        // protocol with the client's assignor.
        Map<String, Object> extra = assignor.startsWith("consumer-")
                ? Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer",
                        ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor.substring("consumer-".length()),
                        ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "25")
                : Map.of(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignorClass(assignor),
                        ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "25");

        Member a = new Member("a", ctx.consumer(group, extra));
        Member b = new Member("b", ctx.consumer(group, extra));
        try {
            a.subscribe(topic);
            Support.waitUntil("the first member owns all " + parts + " partitions", WAIT, () -> {
                a.poll();
                return a.owned.equals(all);
            }, a::toString);
            int genAlone = a.generation();

            b.subscribe(topic);
            Support.waitUntil("two members share the partitions", WAIT, () -> {
                pollAll(List.of(a, b));
                return settled(a, b, all);
            }, () -> a + " " + b);
            eq(parts / 2, a.owned.size(), "partitions of the first member (" + assignor + " balances 6 over 2)");
            eq(parts / 2, b.owned.size(), "partitions of the second member");
            if (assignor.equals("consumer-range")) {
                ConsumerProtocolChecks.checkRangeLayout(a.owned, b.owned, parts);
                eq("range", ConsumerProtocolChecks.describeConsumerGroup(ctx, group).partitionAssignor(),
                        "assignor of the described group");
            }
            int genShared = a.generation();
            check(genShared > genAlone, "generation did not move on the join: %d then %d", genAlone, genShared);
            Set<TopicPartition> aShared = new HashSet<>(a.owned);
            Set<TopicPartition> bShared = new HashSet<>(b.owned);

            produce(ctx, topic, parts, perBatch, "one");
            Support.waitUntil("both members consumed the first batch", WAIT, () -> {
                pollAll(List.of(a, b));
                return a.consumed.size() + b.consumed.size() >= parts * perBatch;
            }, () -> a + " " + b);
            eq(aShared, a.owned, "first member's partitions after the first batch (no rebalance)");
            eq(bShared, b.owned, "second member's partitions after the first batch (no rebalance)");
            int bFirst = b.consumed.size();
            eq(bShared.size() * perBatch, bFirst, "records the second member consumed from its partitions");

            produce(ctx, topic, parts, perBatch, "two");
            Support.waitUntil("the second member consumed part of the second batch", WAIT, () -> {
                b.poll();
                return b.consumed.size() > bFirst;
            }, b::toString);
            int bTotal = b.consumed.size();
            check(bTotal < bFirst + bShared.size() * perBatch, "the second member read its whole second batch "
                    + "in one poll (max.poll.records=25)");
            int aCallsBefore = a.assignedCalls;
            b.close();

            Support.waitUntil("the first member took over every partition and consumed everything", WAIT, () -> {
                a.poll();
                return a.owned.equals(all) && a.consumed.size() + b.consumed.size() >= 2 * parts * perBatch;
            }, () -> a + " " + b);
            check(a.assignedCalls > aCallsBefore, "no rebalance callback on the remaining member after the leave");
            check(a.generation() > genShared, "generation did not move after the leave: %d", a.generation());
            eq(0, a.lostCalls + b.lostCalls, "onPartitionsLost calls");

            // Exactly once across the handover: every offset 0..99 of every
            // partition consumed by one member, once.
            List<String> every = new ArrayList<>(a.consumedPositions);
            every.addAll(b.consumedPositions);
            Set<String> distinct = new HashSet<>(every);
            check(distinct.size() == every.size(), "duplicates across the handover: %d records consumed, %d distinct",
                    every.size(), distinct.size());
            Set<String> expected = new HashSet<>();
            for (int p = 0; p < parts; p++) {
                for (int o = 0; o < 2 * perBatch; o++) {
                    expected.add(p + "@" + o);
                }
            }
            eq(new TreeSet<>(expected), new TreeSet<>(distinct), "records consumed by the group");
            for (ConsumerRecord<String, String> r : b.consumed) {
                check(bShared.contains(new TopicPartition(topic, r.partition())),
                        "second member consumed %s outside its assignment", Support.show(r));
            }
            int genFinal = a.generation();
            a.close();

            Map<TopicPartition, OffsetAndMetadata> offsets = get(
                    ctx.admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata(), "listConsumerGroupOffsets");
            for (TopicPartition tp : all) {
                check(offsets.get(tp) != null, "no committed offset for %s", tp);
                eq(2L * perBatch, offsets.get(tp).offset(), "committed offset of " + tp);
            }
            return "6 partitions: all to a at generation " + genAlone + ", 3/3 at generation " + genShared
                    + "; member b left after " + (bTotal - bFirst) + " records of the second batch; a took over at "
                    + "generation " + genFinal + "; 600 records consumed exactly once; committed 100 each";
        } finally {
            b.close();
            a.close();
        }
    }

    static ConsumerGroupDescription describeGroup(Ctx ctx, String group) {
        return get(ctx.admin().describeConsumerGroups(List.of(group)).describedGroups().get(group),
                "describeConsumerGroups " + group);
    }

    static Map<String, String> membersByInstance(ConsumerGroupDescription d) {
        Map<String, String> out = new HashMap<>();
        for (MemberDescription m : d.members()) {
            out.put(m.groupInstanceId().orElse("<dynamic " + m.consumerId() + ">"), m.consumerId());
        }
        return out;
    }

    /**
     * Static membership: a member that closes (staying in the group) and comes
     * back with the same group.instance.id within the session timeout gets its
     * partitions back at the same generation, and the other member sees no
     * rebalance. `leader` picks which member comes back: the leader (the
     * member that joined first) or the follower.
     */
    static String staticMembership(Ctx ctx, boolean leader) {
        int parts = 4;
        String role = leader ? "leader" : "follower";
        String topic = ctx.name("static-" + role);
        String group = ctx.name("static-" + role);
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
                return settled(s1, s2, all);
            }, () -> s1 + " " + s2);

            produce(ctx, topic, parts, 10, "before");
            Support.waitUntil("the first batch is consumed", WAIT, () -> {
                pollAll(List.of(s1, s2));
                return s1.consumed.size() + s2.consumed.size() >= parts * 10;
            }, () -> s1 + " " + s2);

            // A third (dynamic) member joins and leaves again: two rebalances
            // after which both static members' stored subscriptions carry the
            // partitions they own and their generation, as in any group that
            // has lived through a rebalance.
            int genTwo = s1.generation();
            Member dyn = new Member("dynamic", ctx.consumer(group, Map.of(
                    ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName())));
            open.add(dyn);
            dyn.subscribe(topic);
            Support.waitUntil("a third member shares the partitions", WAIT, () -> {
                pollAll(List.of(s1, s2, dyn));
                Set<TopicPartition> union = new HashSet<>(s1.owned);
                union.addAll(s2.owned);
                union.addAll(dyn.owned);
                return !dyn.owned.isEmpty() && !s1.owned.isEmpty() && !s2.owned.isEmpty() && union.equals(all)
                        && s1.generation() == dyn.generation() && s2.generation() == dyn.generation();
            }, () -> s1 + " " + s2 + " " + dyn);
            int genThree = dyn.generation();
            dyn.close();
            Support.waitUntil("the two static members share the partitions again", WAIT, () -> {
                pollAll(List.of(s1, s2));
                return settled(s1, s2, all) && s1.generation() > genThree;
            }, () -> s1 + " " + s2);
            check(genThree > genTwo, "generation did not move when the third member joined");

            Member back = leader ? rejoin(ctx, group, topic, s1, s2, id1, id2, "s1'", open, parts, role)
                    : rejoin(ctx, group, topic, s2, s1, id2, id1, "s2'", open, parts, role);
            Member other = leader ? s2 : s1;

            int gen = back.generation();
            back.closeAndLeave();
            other.closeAndLeave();
            Support.waitUntil("the group is Empty after both static members left", WAIT, () -> {
                ConsumerGroupDescription d = describeGroup(ctx, group);
                return d.groupState() == GroupState.EMPTY && d.members().isEmpty();
            }, () -> describeGroup(ctx, group).toString());
            return "after a third member came and went, the static " + role + " closed (group stayed Stable with "
                    + "its member) and rejoined with its "
                    + "instance id: same partitions, same generation " + gen + ", new member id, no rebalance of the "
                    + "other member, resumed at the committed offsets; close(LEAVE_GROUP) of both emptied the group";
        } finally {
            for (Member m : open) {
                m.close();
            }
        }
    }

    static Member staticMember(Ctx ctx, String group, String topic, String instanceId, String name, List<Member> open) {
        Map<String, Object> extra = Map.of(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId,
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName(),
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "30000");
        Member m = new Member(name, ctx.consumer(group, extra));
        open.add(m);
        m.subscribe(topic);
        return m;
    }

    /** Closes `leaving` (a static member stays in the group) and brings it back under the same instance id. */
    static Member rejoin(Ctx ctx, String group, String topic, Member leaving, Member other, String leavingId,
            String otherId, String newName, List<Member> open, int parts, String role) {
        int gen = leaving.generation();
        eq(gen, other.generation(), "generations of the two members before the " + role + " leaves");
        String oldMemberId = leaving.memberId();
        Set<TopicPartition> leavingOwned = new HashSet<>(leaving.owned);
        Set<TopicPartition> otherOwned = new HashSet<>(other.owned);
        int otherAssigned = other.assignedCalls;
        int otherRevoked = other.revokedCalls;

        ConsumerGroupDescription before = describeGroup(ctx, group);
        eq(GroupState.STABLE, before.groupState(), "group state before the " + role + " leaves");
        eq(Set.of(leavingId, otherId), membersByInstance(before).keySet(), "instance ids in the group");

        leaving.close();
        // A static member's close does not leave the group: it stays Stable with both members.
        ConsumerGroupDescription during = describeGroup(ctx, group);
        eq(GroupState.STABLE, during.groupState(), "group state after the static " + role + " closed");
        eq(oldMemberId, membersByInstance(during).get(leavingId),
                "member id of the closed static " + role + " still in the group");

        Member back = staticMember(ctx, group, topic, leavingId, newName, open);
        Support.waitUntil("the " + role + " that came back has its partitions", WAIT, () -> {
            pollAll(List.of(back, other));
            return !back.owned.isEmpty();
        }, () -> back + " " + other);
        // From here on every difference is collected, so that one failure shows the whole picture.
        List<String> wrong = new ArrayList<>();
        expect(wrong, leavingOwned, back.owned, "partitions of the static " + role + " that came back");
        expect(wrong, gen, back.generation(), "generation of the static " + role + " that came back");
        if (back.memberId().equals(oldMemberId)) {
            wrong.add("the rejoined " + role + " kept its old member id " + oldMemberId);
        }

        ConsumerGroupDescription after = describeGroup(ctx, group);
        expect(wrong, GroupState.STABLE, after.groupState(), "group state after the " + role + " came back");
        expect(wrong, back.memberId(), membersByInstance(after).get(leavingId), "member id of the rejoined " + role);
        expect(wrong, 2, after.members().size(), "members after the " + role + " came back");

        // New records on every partition: both members consume theirs, the one
        // that came back from the committed offsets on. Meanwhile (several
        // heartbeat intervals) the other member must see no rebalance.
        int backBefore = back.consumed.size();
        int otherBefore = other.consumed.size();
        produce(ctx, topic, parts, 10, "after-" + role);
        long observeUntil = System.nanoTime() + Duration.ofSeconds(2).toNanos();
        Support.waitUntil("both members consumed the new records", WAIT, () -> {
            pollAll(List.of(back, other));
            return back.consumed.size() - backBefore >= back.owned.size() * 10
                    && other.consumed.size() - otherBefore >= other.owned.size() * 10
                    && System.nanoTime() > observeUntil;
        }, () -> back + " " + other);
        expect(wrong, leavingOwned.size() * 10, back.consumed.size() - backBefore,
                "records the rejoined " + role + " consumed (resumed at the committed offsets)");
        for (ConsumerRecord<String, String> r : back.consumed) {
            if (!r.value().startsWith("after-" + role)) {
                wrong.add("the rejoined " + role + " re-read " + Support.show(r));
                break;
            }
        }
        expect(wrong, otherAssigned, other.assignedCalls, "onPartitionsAssigned calls of the other member");
        expect(wrong, otherRevoked, other.revokedCalls, "onPartitionsRevoked calls of the other member");
        expect(wrong, otherOwned, other.owned, "partitions of the other member");
        expect(wrong, gen, other.generation(), "generation of the other member");
        expect(wrong, gen, back.generation(), "generation of the rejoined " + role + " after consuming");
        if (!wrong.isEmpty()) {
            throw new CheckFailed(String.join("; ", wrong));
        }
        return back;
    }

    static void expect(List<String> wrong, Object expected, Object actual, String what) {
        if (!java.util.Objects.equals(expected, actual)) {
            wrong.add(what + ": expected " + expected + ", got " + actual);
        }
    }
}
