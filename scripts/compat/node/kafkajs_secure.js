#!/usr/bin/env node
// kafkajs over the secured listeners: `scripts/compat/kafkajs.sh --secure`, as
// scripts/compat/security.py runs it against Fjord and against Apache Kafka 4.4
// configured the same way.
//
// Checks, in order, each bounded by a deadline:
//   for each SCRAM credential: over SASL_SSL a topic created, 20 records produced
//     (acks=all) and read back exactly, end offset 20
//   the first credential's user with a wrong password: admin.connect() refused with
//     KafkaJSSASLAuthenticationError (not a timeout)
//   over SSL without a client certificate: admin.connect() refused (the broker's TLS alert)
//   over SSL with the client certificate (mutual TLS): the same round trip
// The broker's certificate is checked against the test CA only, with Node's host
// name check (the certificate names 127.0.0.1).
//
// Environment (the same for every runner's secured mode):
//   COMPAT_SECURE_SASL_SSL, COMPAT_SECURE_SSL   host:port of the two listeners
//   COMPAT_SECURE_CA                            the CA certificate (PEM)
//   COMPAT_SECURE_CERT, COMPAT_SECURE_KEY       the client certificate and its key (PEM)
//   COMPAT_SECURE_SCRAM                         MECHANISM:USER:PASSWORD[,...]
// Exit 0 when every check passes, 1 otherwise.
'use strict'

const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

const RECORDS = 20
const STEP_TIMEOUT = 30000
const suffix = `${Date.now()}-${process.pid}`

function env(name) {
  const v = process.env[name]
  if (!v) {
    console.error(`kafkajs --secure: ${name} is not set`)
    process.exit(2)
  }
  return v
}

const saslSsl = env('COMPAT_SECURE_SASL_SSL')
const ssl = env('COMPAT_SECURE_SSL')
const ca = fs.readFileSync(env('COMPAT_SECURE_CA'), 'utf8')
const cert = fs.readFileSync(env('COMPAT_SECURE_CERT'), 'utf8')
const key = fs.readFileSync(env('COMPAT_SECURE_KEY'), 'utf8')
const creds = env('COMPAT_SECURE_SCRAM').split(',').map(c => {
  const i = c.indexOf(':')
  const j = c.indexOf(':', i + 1)
  if (i < 0 || j < 0) {
    console.error(`kafkajs --secure: COMPAT_SECURE_SCRAM: ${c} is not MECHANISM:USER:PASSWORD`)
    process.exit(2)
  }
  return { mechanism: c.slice(0, i), username: c.slice(i + 1, j), password: c.slice(j + 1) }
})

class CheckFailed extends Error {}

function expect(cond, msg) {
  if (!cond) throw new CheckFailed(msg)
}

function withTimeout(promise, ms, what) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckFailed(`${what}: no answer within ${ms / 1000}s`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

function client(brokers, security) {
  return new Kafka({
    clientId: 'fjord-compat-kafkajs',
    brokers: [brokers],
    connectionTimeout: 10000,
    requestTimeout: STEP_TIMEOUT,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2000 },
    logLevel: logLevel.NOTHING,
    ...security,
  })
}

const scram = c => ({
  ssl: { ca: [ca] },
  sasl: { mechanism: c.mechanism.toLowerCase(), username: c.username, password: c.password },
})
const mtls = { ssl: { ca: [ca], cert, key } }

// A topic created, RECORDS records produced and read back exactly from the start.
async function roundTrip(kafka, tag) {
  const topic = `kjs-sec-${tag}-${suffix}`
  const want = Array.from({ length: RECORDS }, (_, i) => `${tag}-${String(i).padStart(2, '0')}`)
  const admin = kafka.admin()
  const producer = kafka.producer()
  const consumer = kafka.consumer({ groupId: `kjs-sec-${tag}-${suffix}`, maxWaitTimeInMs: 500 })
  try {
    await withTimeout(admin.connect(), STEP_TIMEOUT, 'admin.connect')
    const created = await withTimeout(
      admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true }),
      STEP_TIMEOUT, 'createTopics')
    expect(created === true, `createTopics answered ${created}`)
    await withTimeout(producer.connect(), STEP_TIMEOUT, 'producer.connect')
    const meta = await withTimeout(
      producer.send({ topic, acks: -1, messages: want.map(value => ({ value })) }), STEP_TIMEOUT, 'producer.send')
    expect(meta.length === 1 && meta[0].errorCode === 0 && meta[0].baseOffset === '0',
      `producer.send answered ${JSON.stringify(meta)}, want base offset 0 without error`)
    const got = []
    await withTimeout(consumer.connect(), STEP_TIMEOUT, 'consumer.connect')
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    let done
    const all = new Promise(resolve => { done = resolve })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        got.push(message.value.toString())
        if (got.length >= RECORDS) done()
      },
    })
    await withTimeout(all, STEP_TIMEOUT, `reading back ${RECORDS} records (${got.length} so far)`)
    expect(JSON.stringify(got) === JSON.stringify(want), `read back ${JSON.stringify(got)}, want ${JSON.stringify(want)}`)
    const offsets = await withTimeout(admin.fetchTopicOffsets(topic), STEP_TIMEOUT, 'fetchTopicOffsets')
    expect(offsets.length === 1 && offsets[0].high === String(RECORDS),
      `fetchTopicOffsets ${JSON.stringify(offsets)}, want high ${RECORDS}`)
    return `${RECORDS} records read back in order, end offset ${RECORDS}`
  } finally {
    await Promise.allSettled([consumer.disconnect(), producer.disconnect(), admin.disconnect()])
  }
}

async function refused(c) {
  const wrong = { ...c, password: `${c.password}-wrong` }
  const admin = client(saslSsl, scram(wrong)).admin()
  const started = Date.now()
  try {
    await withTimeout(admin.connect(), STEP_TIMEOUT, 'admin.connect with a wrong password')
  } catch (e) {
    if (e instanceof CheckFailed) throw e
    expect(e.name === 'KafkaJSSASLAuthenticationError',
      `admin.connect with a wrong password failed with ${e.name}: ${e.message}, want KafkaJSSASLAuthenticationError`)
    return `${e.name} after ${Date.now() - started} ms: ${e.message}`
  } finally {
    await admin.disconnect().catch(() => {})
  }
  throw new CheckFailed('admin.connect with a wrong password succeeded')
}

async function refusedWithoutCert() {
  const admin = client(ssl, { ssl: { ca: [ca] }, retry: { retries: 0 } }).admin()
  const started = Date.now()
  try {
    await withTimeout(admin.connect(), STEP_TIMEOUT, 'admin.connect without a client certificate')
  } catch (e) {
    if (e instanceof CheckFailed) throw e
    // The alert reaches Node as an OpenSSL error: rustls sends certificate_required, Kafka's JSSE bad_certificate.
    const alert = /alert/i.test(`${e.message} ${e.originalError || ''}`)
    expect(alert, `admin.connect without a client certificate failed with ${e.name}: ${e.message}, want the broker's TLS alert`)
    return `${e.name} after ${Date.now() - started} ms: ${e.message.trim()}`
  } finally {
    await admin.disconnect().catch(() => {})
  }
  throw new CheckFailed('admin.connect without a client certificate succeeded')
}

async function main() {
  const checks = creds.map(c => [
    `SASL_SSL ${c.mechanism} as ${c.username}: produce ${RECORDS} records and read them back`,
    () => roundTrip(client(saslSsl, scram(c)), c.mechanism.toLowerCase()),
  ])
  checks.push([`SASL_SSL ${creds[0].mechanism} as ${creds[0].username} with a wrong password: refused with KafkaJSSASLAuthenticationError`,
    () => refused(creds[0])])
  checks.push(['SSL without a client certificate (ssl.client.auth=required): refused with a TLS alert', refusedWithoutCert])
  checks.push([`SSL with a client certificate (mutual TLS): produce ${RECORDS} records and read them back`,
    () => roundTrip(client(ssl, mtls), 'mtls')])
  let failed = 0
  for (const [name, fn] of checks) {
    const t0 = Date.now()
    try {
      const summary = await fn()
      console.log(`ok: ${name}: ${summary} (${((Date.now() - t0) / 1000).toFixed(1)}s)`)
    } catch (e) {
      failed++
      console.log(`FAIL: ${name}: ${e instanceof CheckFailed ? '' : `unexpected ${e.name}: `}${e.message} (${((Date.now() - t0) / 1000).toFixed(1)}s)`)
    }
  }
  console.log(`kafkajs --secure: ${checks.length - failed} passed, ${failed} failed`)
  return failed === 0 ? 0 : 1
}

main().then(code => process.exit(code), e => {
  console.error(`kafkajs --secure: ${e.stack || e}`)
  process.exit(1)
})
