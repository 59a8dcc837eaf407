#!/usr/bin/env node
// kafkajs (pure JavaScript Kafka client) against a running broker.
//
// Usage: node kafkajs_runner.js BOOTSTRAP   (run by scripts/compat/kafkajs.sh)
// Environment: COMPAT_BROKER=fjord|kafka.
//
// Checks, in order, each bounded by a deadline (no sleeps as synchronisation):
//   admin       createTopics (3 partitions + a config, 1 partition), fetchTopicMetadata,
//               describeConfigs (the override and a default)
//   produce     120 keyed records with headers and explicit timestamps: 60 uncompressed,
//               60 gzip (snappy/lz4/zstd need kafkajs codec plugins, not installed: skipped);
//               every RecordMetadata without error, fetchTopicOffsets = what was sent
//   group       consumer 1 of a group reads 37 records and resolves exactly those, then
//               disconnects; fetchOffsets gives exactly the next offsets, describeGroups says
//               Empty; consumer 2 of the same group resumes there and reads the other 83
//               (mid-batch, a gzip batch included):
//               none lost, none twice, key/value/headers/timestamp equal to what was sent
//   admin       fetchTopicOffsetsByTimestamp, deleteTopicRecords, createPartitions,
//               listGroups, deleteGroups
//   txn         a transactional producer commits, aborts, commits; read_committed and
//               read_uncommitted consumers see what Kafka's would
//   delete      deleteTopics, then the topics are no longer listed
// Exit 0 when every check passes, 1 otherwise (reasons on stderr).
'use strict'

const { Kafka, CompressionTypes, ConfigResourceTypes, logLevel } = require('kafkajs')

const BOOTSTRAP = process.argv[2] || process.env.FJORD_BOOTSTRAP
const BROKER = process.env.COMPAT_BROKER || 'fjord'
const STEP_TIMEOUT = Number(process.env.KJS_STEP_TIMEOUT || 30000)
const RUN_BUDGET = Number(process.env.KJS_RUN_BUDGET || 110000)

// Check name -> what Fjord is known to do differently (scripts/compat/FINDINGS.md, "kafkajs").
const KNOWN_DIFFERENCES = {}

class CheckFailed extends Error {}

function expect(cond, msg) {
  if (!cond) throw new CheckFailed(typeof msg === 'function' ? msg() : msg)
}

function knownDifference(name, passed, detail) {
  if (BROKER === 'fjord' && KNOWN_DIFFERENCES[name]) {
    if (passed) console.log(`note: ${name} now passes against Fjord; remove it from KNOWN_DIFFERENCES and FINDINGS.md`)
    else console.log(`KNOWN DIFFERENCE: ${KNOWN_DIFFERENCES[name]}: ${detail} (FINDINGS.md)`)
    return passed
  }
  expect(passed, detail)
  return true
}

function withTimeout(promise, ms, what) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckFailed(`${what}: no answer within ${ms / 1000}s`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

const json = v => JSON.stringify(v)
const suffix = `${Date.now()}-${process.pid}`
const topic = `kjs-${suffix}`
const smallTopic = `kjs-small-${suffix}`
const groupId = `kjs-group-${suffix}`
const txnTopic = `kjs-txn-${suffix}`

const clientErrors = []
const kafka = new Kafka({
  clientId: 'fjord-compat-kafkajs',
  brokers: [BOOTSTRAP],
  connectionTimeout: 10000,
  requestTimeout: STEP_TIMEOUT,
  retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2000 },
  logLevel: logLevel.ERROR,
  logCreator: () => ({ namespace, log }) => {
    clientErrors.push(`${namespace}: ${log.message}`)
    console.error(`  [kafkajs ${namespace}] ${log.message}${log.error ? ` (${log.error})` : ''}`)
  },
})
const admin = kafka.admin()
const sent = [] // { key, value, headers, timestamp } as sent
const readAll = [] // what the two group consumers read (with partition and offset)
const N_PLAIN = 60
const N_GZIP = 60
const N_FIRST = 37

// Record timestamps: explicit, one second apart, starting ten minutes before
// the run, so none is older than the topic's retention.ms (one hour) while the
// run lasts (a broker's retention pass may come at any time and deletes
// expired records, on Kafka as on Fjord).
const T0 = Math.floor(Date.now() / 1000) * 1000 - 600 * 1000

function records(tag, count, base) {
  const out = []
  for (let i = 0; i < count; i++) {
    const n = base + i
    out.push({
      key: `key-${n % 17}`,
      value: `${tag}-value-${n}-${'x'.repeat(n % 50)}`,
      headers: { h1: `one-${n}`, h2: Buffer.from([n % 256, 0, 255]) },
      timestamp: String(T0 + n * 1000),
    })
  }
  return out
}

async function checkAdminCreate() {
  const created = await withTimeout(
    admin.createTopics({
      topics: [
        { topic, numPartitions: 3, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '3600000' }] },
        { topic: smallTopic, numPartitions: 1, replicationFactor: 1 },
        { topic: txnTopic, numPartitions: 1, replicationFactor: 1 },
      ],
      waitForLeaders: true,
      timeout: STEP_TIMEOUT,
    }),
    STEP_TIMEOUT + 5000,
    'createTopics'
  )
  expect(created === true, `createTopics answered ${created}, want true (both topics created)`)
  const cluster = await withTimeout(admin.describeCluster(), STEP_TIMEOUT, 'describeCluster')
  const ids = cluster.brokers.map(b => b.nodeId)
  await expectPartitions([[topic, 3], [smallTopic, 1], [txnTopic, 1]], ids)
  console.log(`ok: admin.createTopics (3 partitions + retention.ms, 1 partition, 1 partition), describeCluster (brokers ${json(ids)}), fetchTopicMetadata (every partition led, replicas = isr = [leader])`)
}

async function expectPartitions(topics, ids) {
  const md = await withTimeout(admin.fetchTopicMetadata({ topics: topics.map(t => t[0]) }), STEP_TIMEOUT, 'fetchTopicMetadata')
  const byName = Object.fromEntries(md.topics.map(t => [t.name, t]))
  for (const [name, n] of topics) {
    const t = byName[name]
    expect(t, `fetchTopicMetadata has no ${name}: ${json(md)}`)
    const parts = t.partitions.map(p => p.partitionId).sort()
    expect(json(parts) === json([...Array(n).keys()]), `${name}: partitions ${json(parts)}`)
    for (const p of t.partitions) {
      expect(
        p.partitionErrorCode === 0 && ids.includes(p.leader) && json(p.replicas) === json([p.leader]) && json(p.isr) === json([p.leader]),
        `${name}/${p.partitionId}: ${json(p)} (brokers ${json(ids)})`
      )
    }
  }
}

async function checkDescribeConfigs() {
  const res = await withTimeout(
    admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms', 'cleanup.policy', 'max.message.bytes'] }],
      includeSynonyms: false,
    }),
    STEP_TIMEOUT,
    'describeConfigs'
  )
  expect(res.resources.length === 1 && res.resources[0].errorCode === 0, `describeConfigs: ${json(res)}`)
  const entries = Object.fromEntries(res.resources[0].configEntries.map(e => [e.configName, e]))
  const want = {
    'retention.ms': ['3600000', false, 1], // DYNAMIC_TOPIC_CONFIG
    'cleanup.policy': ['delete', true, 5], // DEFAULT_CONFIG
    'max.message.bytes': ['1048588', true, 5],
  }
  for (const [name, [value, isDefault, source]] of Object.entries(want)) {
    const e = entries[name]
    expect(
      e && e.configValue === value && e.isDefault === isDefault && e.configSource === source && e.readOnly === false && e.isSensitive === false,
      `describeConfigs ${name}: ${json(e)}, want value ${value}, isDefault ${isDefault}, configSource ${source}`
    )
  }
  expect(Object.keys(entries).length === 3, `describeConfigs asked for 3 names, got ${json(Object.keys(entries))}`)
  console.log('ok: admin.describeConfigs (topic): retention.ms override (DYNAMIC_TOPIC_CONFIG), cleanup.policy and max.message.bytes defaults')
}

async function topicHigh() {
  const offsets = await withTimeout(admin.fetchTopicOffsets(topic), STEP_TIMEOUT, 'fetchTopicOffsets')
  expect(offsets.length === 3 && offsets.every(o => o.low === '0' && o.offset === o.high), `fetchTopicOffsets: ${json(offsets)}`)
  return Object.fromEntries(offsets.map(o => [o.partition, Number(o.high)]))
}

async function checkProduce() {
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await withTimeout(producer.connect(), STEP_TIMEOUT, 'producer.connect')
  let high = await topicHigh()
  expect(json(high) === json({ 0: 0, 1: 0, 2: 0 }), `fetchTopicOffsets of the new topic: ${json(high)}`)
  try {
    for (const [tag, count, base, compression] of [
      ['none', N_PLAIN, 0, CompressionTypes.None],
      ['gzip', N_GZIP, N_PLAIN, CompressionTypes.GZIP],
    ]) {
      const msgs = records(tag, count, base)
      const meta = await withTimeout(producer.send({ topic, acks: -1, compression, messages: msgs }), STEP_TIMEOUT, `send (${tag})`)
      expect(meta.every(m => m.errorCode === 0 && m.topicName === topic), `send (${tag}): ${json(meta)}`)
      // One RecordMetadata per partition written, its baseOffset the partition's previous end.
      const parts = meta.map(m => m.partition).sort()
      expect(new Set(parts).size === parts.length, `send (${tag}): two RecordMetadata for one partition ${json(meta)}`)
      for (const m of meta) {
        expect(Number(m.baseOffset) === high[m.partition], `send (${tag}): partition ${m.partition} baseOffset ${m.baseOffset}, want ${high[m.partition]}`)
      }
      sent.push(...msgs)
      const before = high
      high = await topicHigh()
      const added = [0, 1, 2].reduce((n, p) => n + high[p] - before[p], 0)
      expect(added === count, `fetchTopicOffsets after send (${tag}): ${json(before)} -> ${json(high)}, want ${count} more`)
      expect(meta.every(m => high[m.partition] > before[m.partition]), `send (${tag}): a partition in RecordMetadata did not grow`)
    }
    // A record to a named partition, on the single-partition topic.
    const meta = await withTimeout(
      producer.send({ topic: smallTopic, messages: [{ key: 'k', value: 'v', partition: 0 }] }),
      STEP_TIMEOUT,
      'send (explicit partition)'
    )
    expect(meta.length === 1 && meta[0].partition === 0 && meta[0].baseOffset === '0' && meta[0].errorCode === 0, `send (explicit partition): ${json(meta)}`)
  } finally {
    await producer.disconnect()
  }
  checkProduce.high = high
  console.log(`ok: producer.send ${N_PLAIN} uncompressed + ${N_GZIP} gzip keyed records with headers and timestamps (acks -1): RecordMetadata baseOffsets = the previous ends; one to a named partition; fetchTopicOffsets ${json(high)}`)
  console.log('skip: snappy, lz4, zstd: kafkajs needs a codec plugin for each (not installed)')
}

function decode(message, partition) {
  const headers = {}
  for (const [k, v] of Object.entries(message.headers || {})) headers[k] = v
  return {
    partition,
    offset: Number(message.offset),
    key: message.key ? message.key.toString() : null,
    value: message.value ? message.value.toString() : null,
    headers,
    timestamp: message.timestamp,
  }
}

// Reads with a group member until `want` records were resolved; resolves only those.
async function consumeGroup(label, want) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000, maxWaitTimeInMs: 500 })
  const got = []
  let done
  const finished = new Promise(resolve => (done = resolve))
  await withTimeout(consumer.connect(), STEP_TIMEOUT, `${label} connect`)
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    await consumer.run({
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, commitOffsetsIfNecessary }) => {
        for (const message of batch.messages) {
          if (got.length >= want) break
          got.push(decode(message, batch.partition))
          resolveOffset(message.offset)
        }
        await commitOffsetsIfNecessary()
        if (got.length >= want) done()
      },
    })
    await withTimeout(finished, STEP_TIMEOUT, `${label}: ${want} records (got ${got.length} so far)`)
  } finally {
    await consumer.disconnect()
  }
  return got
}

function expectRecordsMatch(label, got) {
  // Each record read must be one that was sent: same key/value/headers/timestamp; a key stays
  // on one partition; offsets per partition are contiguous and in send order.
  const byValue = new Map(sent.map(s => [s.value, s]))
  const keyPart = {}
  for (const r of got) {
    const s = byValue.get(r.value)
    expect(s, `${label}: read a record that was not sent: ${json(r)}`)
    expect(r.key === s.key && r.timestamp === s.timestamp, `${label}: ${json(r)} differs from what was sent ${json(s)}`)
    expect(r.headers.h1 && r.headers.h1.toString() === s.headers.h1 && Buffer.compare(r.headers.h2, s.headers.h2) === 0,
      `${label}: headers of ${r.value}: ${json(r.headers)}`)
    expect(keyPart[r.key] === undefined || keyPart[r.key] === r.partition, `${label}: key ${r.key} on two partitions`)
    keyPart[r.key] = r.partition
  }
}

async function checkGroupResume() {
  const first = await consumeGroup('consumer 1', N_FIRST)
  expectRecordsMatch('consumer 1', first)
  const next = {}
  for (const r of first) next[r.partition] = Math.max(next[r.partition] ?? 0, r.offset + 1)
  const fetched = await withTimeout(admin.fetchOffsets({ groupId, topics: [topic] }), STEP_TIMEOUT, 'fetchOffsets')
  expect(fetched.length === 1 && fetched[0].topic === topic, `fetchOffsets: ${json(fetched)}`)
  const committed = {}
  for (const p of fetched[0].partitions) committed[p.partition] = Number(p.offset)
  const want = {}
  for (const p of [0, 1, 2]) want[p] = next[p] ?? -1
  expect(json(committed) === json(want), `fetchOffsets after consumer 1: ${json(committed)}, want ${json(want)} (the offsets after what it read)`)
  for (const p of [0, 1, 2]) {
    const offs = first.filter(r => r.partition === p).map(r => r.offset)
    expect(json(offs) === json([...Array(offs.length).keys()]), `consumer 1, partition ${p}: offsets ${json(offs)}, want 0..${offs.length - 1}`)
  }
  const groups = await withTimeout(admin.describeGroups([groupId]), STEP_TIMEOUT, 'describeGroups')
  expect(groups.groups.length === 1 && groups.groups[0].state === 'Empty' && groups.groups[0].protocolType === 'consumer',
    `describeGroups after consumer 1 left: ${json(groups.groups.map(g => ({ state: g.state, protocolType: g.protocolType, members: g.members.length })))}`)
  console.log(`ok: consumer 1 (group ${groupId}) read ${N_FIRST} records from offset 0 and left; admin.fetchOffsets ${json(committed)}; describeGroups: Empty`)

  const rest = await consumeGroup('consumer 2', N_PLAIN + N_GZIP - N_FIRST)
  expectRecordsMatch('consumer 2', rest)
  for (const p of [0, 1, 2]) {
    const offs = rest.filter(r => r.partition === p).map(r => r.offset)
    const from = Math.max(want[p], 0)
    const wantOffs = [...Array(checkProduce.high[p] - from).keys()].map(i => from + i)
    expect(json(offs) === json(wantOffs), `consumer 2, partition ${p}: offsets ${json(offs)}, want ${json(wantOffs)}`)
  }
  readAll.push(...first, ...rest)
  const all = [...first, ...rest].map(r => r.value)
  expect(new Set(all).size === all.length, 'a record was read twice')
  expect(json([...all].sort()) === json(sent.map(s => s.value).sort()), 'the two consumers together did not read every record once')
  const gz = rest.concat(first).filter(r => byCodec(r) === 'gzip').length
  expect(gz === N_GZIP, `${gz} gzip records read, want ${N_GZIP}`)
  console.log(`ok: consumer 2 resumed at the committed offsets and read the other ${rest.length}: none lost, none twice, key/value/headers/timestamps as sent (gzip and uncompressed)`)
  const after = await withTimeout(admin.fetchOffsets({ groupId, topics: [topic] }), STEP_TIMEOUT, 'fetchOffsets')
  const end = Object.fromEntries(after[0].partitions.map(p => [p.partition, Number(p.offset)]))
  expect(json(end) === json(checkProduce.high), `fetchOffsets after consumer 2: ${json(end)}, want ${json(checkProduce.high)}`)
  console.log(`ok: admin.fetchOffsets after consumer 2 = the high watermarks ${json(end)}`)
}

function byCodec(r) {
  return r.value.split('-')[0]
}

async function checkOffsetsByTimestamp() {
  const target = T0 + 80 * 1000 // record 80's timestamp; they grow with the record number
  const got = await withTimeout(admin.fetchTopicOffsetsByTimestamp(topic, target), STEP_TIMEOUT, 'fetchTopicOffsetsByTimestamp')
  const want = {}
  for (const p of [0, 1, 2]) {
    const offs = readAll.filter(r => r.partition === p && Number(r.timestamp) >= target).map(r => r.offset)
    want[p] = offs.length ? Math.min(...offs) : checkProduce.high[p] // kafkajs gives the end for "none"
  }
  const gotMap = Object.fromEntries(got.map(o => [o.partition, Number(o.offset)]))
  expect(json(gotMap) === json(want), `fetchTopicOffsetsByTimestamp(${target}): ${json(gotMap)}, want ${json(want)}`)
  console.log(`ok: admin.fetchTopicOffsetsByTimestamp: the first record at or after the timestamp per partition ${json(want)}`)
}

async function checkDeleteRecordsAndPartitions() {
  await withTimeout(admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '5' }] }), STEP_TIMEOUT, 'deleteTopicRecords')
  const offsets = await withTimeout(admin.fetchTopicOffsets(topic), STEP_TIMEOUT, 'fetchTopicOffsets')
  const low = Object.fromEntries(offsets.map(o => [o.partition, o.low]))
  expect(json(low) === json({ 0: '5', 1: '0', 2: '0' }), `low watermarks after deleteTopicRecords(partition 0, offset 5): ${json(low)}`)
  // createPartitions resolves without a value; an error rejects.
  await withTimeout(admin.createPartitions({ topicPartitions: [{ topic, count: 4 }], timeout: STEP_TIMEOUT }), STEP_TIMEOUT + 5000, 'createPartitions')
  const cluster = await withTimeout(admin.describeCluster(), STEP_TIMEOUT, 'describeCluster')
  // The metadata may take a moment to show the new partition on Kafka: ask again, bounded.
  const deadline = Date.now() + STEP_TIMEOUT
  for (;;) {
    try {
      await expectPartitions([[topic, 4]], cluster.brokers.map(b => b.nodeId))
      break
    } catch (e) {
      if (Date.now() >= deadline) throw e
      await new Promise(r => setTimeout(r, 200))
    }
  }
  console.log('ok: admin.deleteTopicRecords (log start 5 on partition 0, fetchTopicOffsets low), createPartitions to 4 (fetchTopicMetadata)')
}

async function checkGroupsAdmin() {
  const listed = await withTimeout(admin.listGroups(), STEP_TIMEOUT, 'listGroups')
  const g = listed.groups.find(x => x.groupId === groupId)
  expect(g && g.protocolType === 'consumer', `listGroups: ${json(listed.groups.filter(x => x.groupId.startsWith('kjs-')))}`)
  const res = await withTimeout(admin.deleteGroups([groupId]), STEP_TIMEOUT, 'deleteGroups')
  expect(res.length === 1 && res[0].groupId === groupId && res[0].errorCode === 0, `deleteGroups: ${json(res)}`)
  const after = await withTimeout(admin.listGroups(), STEP_TIMEOUT, 'listGroups')
  expect(!after.groups.some(x => x.groupId === groupId), 'listGroups still has the deleted group')
  console.log('ok: admin.listGroups (the group, protocol type consumer), deleteGroups, then listGroups without it')
}

// Reads txnTopic with a new group until the record `last` arrives; gives the values in order.
async function readUntil(label, last, readUncommitted) {
  const consumer = kafka.consumer({ groupId: `kjs-${label}-${suffix}`, readUncommitted, maxWaitTimeInMs: 500 })
  const got = []
  let done
  const finished = new Promise(resolve => (done = resolve))
  await withTimeout(consumer.connect(), STEP_TIMEOUT, `${label} connect`)
  try {
    await consumer.subscribe({ topics: [txnTopic], fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value.toString())
        if (message.value.toString() === last) done()
      },
    })
    await withTimeout(finished, STEP_TIMEOUT, `${label}: read up to ${last} (got ${json(got)})`)
  } finally {
    await consumer.disconnect()
  }
  return got
}

async function checkTransactions() {
  const producer = kafka.producer({ transactionalId: `kjs-txn-id-${suffix}`, idempotent: true, maxInFlightRequests: 1 })
  await withTimeout(producer.connect(), STEP_TIMEOUT, 'transactional producer connect')
  const rounds = [['c1', 5, 'commit'], ['ab', 3, 'abort'], ['c2', 2, 'commit']]
  try {
    for (const [tag, n, end] of rounds) {
      const txn = await withTimeout(producer.transaction(), STEP_TIMEOUT, 'transaction')
      await withTimeout(txn.send({ topic: txnTopic, messages: [...Array(n).keys()].map(i => ({ value: `${tag}-${i}` })) }), STEP_TIMEOUT, `send (${tag})`)
      await withTimeout(end === 'commit' ? txn.commit() : txn.abort(), STEP_TIMEOUT, `${end} (${tag})`)
    }
  } finally {
    await producer.disconnect()
  }
  const values = tag => rounds.filter(r => r[0] === tag).flatMap(([t, n]) => [...Array(n).keys()].map(i => `${t}-${i}`))
  const committed = await readUntil('read-committed', 'c2-1', false)
  expect(json(committed) === json([...values('c1'), ...values('c2')]), `read_committed: ${json(committed)}`)
  const uncommitted = await readUntil('read-uncommitted', 'c2-1', true)
  expect(json(uncommitted) === json([...values('c1'), ...values('ab'), ...values('c2')]), `read_uncommitted: ${json(uncommitted)}`)
  const offsets = await withTimeout(admin.fetchTopicOffsets(txnTopic), STEP_TIMEOUT, 'fetchTopicOffsets')
  expect(offsets.length === 1 && offsets[0].high === '13', `fetchTopicOffsets of the transactional topic: ${json(offsets)}, want 13 (10 records + 3 markers)`)
  console.log('ok: transactional producer (commit 5, abort 3, commit 2): a read_committed consumer reads the 7 committed, a read_uncommitted one all 10 in order; high watermark 13 (3 markers)')
}

async function checkDeleteTopics() {
  const all = [topic, smallTopic, txnTopic]
  await withTimeout(admin.deleteTopics({ topics: all, timeout: STEP_TIMEOUT }), STEP_TIMEOUT + 5000, 'deleteTopics')
  // Kafka deletes asynchronously: ask again (bounded) until the listing has caught up.
  const deadline = Date.now() + STEP_TIMEOUT
  for (;;) {
    const names = await withTimeout(admin.listTopics(), STEP_TIMEOUT, 'listTopics')
    if (!all.some(t => names.includes(t))) break
    expect(Date.now() < deadline, `still listed ${STEP_TIMEOUT / 1000}s after deleteTopics: ${json(names.filter(n => n.startsWith('kjs-')))}`)
    await new Promise(r => setTimeout(r, 200))
  }
  console.log('ok: admin.deleteTopics (3 topics), then listTopics no longer has them')
}

async function main() {
  if (!BOOTSTRAP) {
    console.error('usage: kafkajs_runner.js BOOTSTRAP')
    return 2
  }
  const budget = setTimeout(() => {
    console.error(`FAIL: run budget of ${RUN_BUDGET / 1000}s used up`)
    process.exit(1)
  }, RUN_BUDGET)
  budget.unref()
  const checks = [
    ['admin-create-metadata', checkAdminCreate],
    ['admin-describe-configs', checkDescribeConfigs],
    ['produce-none-gzip', checkProduce],
    ['group-stop-resume', checkGroupResume],
    ['admin-offsets-by-timestamp', checkOffsetsByTimestamp],
    ['admin-delete-records-create-partitions', checkDeleteRecordsAndPartitions],
    ['admin-groups', checkGroupsAdmin],
    ['transactions', checkTransactions],
    ['admin-delete-topics', checkDeleteTopics],
  ]
  const failed = []
  await withTimeout(admin.connect(), STEP_TIMEOUT, 'admin.connect')
  for (const [name, fn] of checks) {
    try {
      await fn()
    } catch (e) {
      console.error(`FAIL: ${name}: ${e instanceof CheckFailed ? e.message : `unexpected ${e.name}: ${e.message}`}`)
      failed.push(name)
    }
  }
  await admin.disconnect()
  if (clientErrors.length) console.log(`note: ${clientErrors.length} kafkajs error log lines (above, on stderr)`)
  if (failed.length) {
    console.log(`kafkajs (${BROKER}): ${failed.length} of ${checks.length} checks failed: ${failed.join(', ')}`)
    return 1
  }
  console.log(`kafkajs (${BROKER}): all ${checks.length} checks passed`)
  return 0
}

main().then(
  code => process.exit(code),
  e => {
    console.error(`FAIL: ${e.stack || e}`)
    process.exit(1)
  }
)
