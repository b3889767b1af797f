// BullMQ's side of rota's peer benchmark. bench/peers/bullmq.go runs this program once per
// workload and reads its result, one JSON line on stdout:
//
//	node bench.mjs --workload drain --redis 127.0.0.1:6379 --db 6 --prefix rota-bench-bullmq-1a2b \
//	    --jobs 100000 --batch 1000 --concurrency 10 --workers 100 --rate 500 --duration-ms 10000
//
// It implements the workloads of package bench (bench/run.go, bench/workload.go) the same way:
// insert-many times N jobs added in addBulk calls of --batch jobs, one call after another;
// insert-one times N jobs added one per Queue.add from --concurrency concurrent producers; drain
// queues N jobs with addBulk, then times from the Worker's start (concurrency --workers) to the
// Worker's "completed" event of the last job, which BullMQ emits once it has moved the job to
// the completed set; latency runs the Worker, adds one job every 1/--rate s for --warmup-ms and
// waits for them to start (not counted, as bench's warm-up), then adds one every 1/--rate s for
// --duration-ms and records for each job the time from its add resolving to its processor
// starting (zero when the processor started first). BullMQ runs on its defaults otherwise.
//
// The machine's CPU time over the timed interval is read from /proc/stat as bench/cpu.go reads
// it. Durations are nanoseconds. The keys live under --prefix, which the Go side deletes after
// the process has exited; this program never flushes a database.
import { readFileSync } from 'node:fs';
import { Queue, Worker } from 'bullmq';

const args = parseArgs(process.argv.slice(2));
const queueName = 'bench';
const stallMs = 30_000; // as bench's stallTimeout
const [host, port] = splitAddr(args.redis ?? '127.0.0.1:6379');
const connection = { host, port, db: Number(args.db ?? 0) };
const prefix = required('prefix');
const jobs = Number(args.jobs ?? 20_000);
const batch = Number(args.batch ?? 1_000);
const concurrency = Number(args.concurrency ?? 10);
const workers = Number(args.workers ?? 100);
const rate = Number(args.rate ?? 500);
const durationMs = Number(args['duration-ms'] ?? 10_000);
const settleMs = Number(args['settle-ms'] ?? 30_000);
const warmUpMs = Number(args['warmup-ms'] ?? 1_000);

const now = () => process.hrtime.bigint(); // ns, monotonic

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    if (!argv[i].startsWith('--')) throw new Error(`unexpected argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[++i];
  }
  return out;
}

function required(name) {
  if (!args[name]) throw new Error(`--${name} is required`);
  return args[name];
}

function splitAddr(addr) {
  const i = addr.lastIndexOf(':');
  return [addr.slice(0, i), Number(addr.slice(i + 1))];
}

// machineBusyNs is bench/cpu.go's machineBusy: user, nice, system, irq and softirq time of the
// whole machine, in ns, or null without /proc/stat.
function machineBusyNs() {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/);
    if (f[0] !== 'cpu' || f.length < 8) return null;
    let ticks = 0n;
    for (const i of [1, 2, 3, 6, 7]) ticks += BigInt(f[i]);
    return ticks * 10_000_000n; // USER_HZ is 100
  } catch {
    return null;
  }
}

function startWatch() {
  return { begin: now(), busy: machineBusyNs() };
}

function stopWatch(w, res) {
  res.elapsed_ns = Number(now() - w.begin);
  const busy = machineBusyNs();
  if (busy !== null && w.busy !== null) res.cpu_ns = Number(busy - w.busy);
}

const data = (seq) => ({ seq });

function bulk(from, to) {
  const out = [];
  for (let i = from; i < to; i++) out.push({ name: queueName, data: data(i) });
  return out;
}

async function insertMany(queue, res) {
  const calls = [];
  const w = startWatch();
  for (let done = 0; done < jobs; ) {
    const n = Math.min(batch, jobs - done);
    const t0 = now();
    await queue.addBulk(bulk(done, done + n));
    calls.push(Number(now() - t0));
    done += n;
    res.jobs = done;
  }
  stopWatch(w, res);
  res.latencies_ns = calls;
}

async function insertOne(queue, res) {
  const calls = new Array(jobs);
  let next = 0;
  const producer = async () => {
    for (let seq = next++; seq < jobs; seq = next++) {
      const t0 = now();
      await queue.add(queueName, data(seq));
      calls[seq] = Number(now() - t0);
    }
  };
  const w = startWatch();
  await Promise.all(Array.from({ length: concurrency }, producer));
  stopWatch(w, res);
  res.jobs = jobs;
  res.latencies_ns = calls;
}

async function drain(queue, res) {
  for (let done = 0; done < jobs; done += batch) {
    await queue.addBulk(bulk(done, Math.min(done + batch, jobs)));
  }
  let completed = 0;
  let lastProgress = Date.now();
  let finish;
  const finished = new Promise((resolve) => (finish = resolve));
  const worker = new Worker(queueName, async () => {}, {
    connection: { ...connection, maxRetriesPerRequest: null },
    prefix,
    concurrency: workers,
    autorun: false,
  });
  worker.on('error', (err) => console.error('bullmq worker:', err.message));
  await worker.waitUntilReady(); // its connection, as rota's store, is open before the clock
  worker.on('completed', () => {
    completed++;
    lastProgress = Date.now();
    if (completed === jobs) {
      res.jobs = jobs;
      finish();
    }
  });
  const w = startWatch();
  worker.run().catch((err) => console.error('bullmq worker:', err.message));
  let stalled = null;
  const tick = setInterval(() => {
    if (Date.now() - lastProgress >= stallMs) {
      stalled = `${completed} of ${jobs} jobs completed, and none in the last ${stallMs / 1000}s`;
      finish();
    }
  }, stallMs / 10);
  await finished;
  clearInterval(tick);
  if (!stalled) stopWatch(w, res);
  if (stalled) res.jobs = completed;
  await worker.close();
  if (stalled) throw new Error(stalled);
}

// countdown resolves done once add has been called target times, as bench's countdown.
function countdown(target) {
  const c = { n: 0 };
  c.done = new Promise((resolve) => {
    c.add = () => {
      if (++c.n === target) resolve();
    };
    if (target <= 0) resolve();
  });
  return c;
}

// within resolves to whether promise settled before ms passed.
async function within(promise, ms) {
  let timer;
  const ok = await Promise.race([promise.then(() => true), new Promise((r) => (timer = setTimeout(() => r(false), ms)))]);
  clearTimeout(timer);
  return ok;
}

// paced adds jobs first..first+n-1, job i at begin + i/rate whether or not earlier adds have
// resolved (as bench's pacedEach), calling added(seq) as each add resolves; it returns once all
// have.
async function paced(queue, begin, first, n, added) {
  const intervalNs = 1_000_000_000n / BigInt(rate);
  const pending = [];
  for (let i = 0; i < n; i++) {
    const wait = Number(begin + BigInt(i) * intervalNs - now()) / 1e6;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const seq = first + i;
    pending.push(queue.add(queueName, data(seq)).then(() => added(seq)));
  }
  await Promise.all(pending);
}

async function latency(queue, res) {
  const total = Math.floor((rate * durationMs) / 1000);
  const warm = Math.floor((rate * warmUpMs) / 1000);
  const warmed = new Array(warm).fill(false);
  const inserted = new Array(total).fill(0n);
  const started = new Array(total).fill(0n);
  const count = countdown(total);
  const warmCount = countdown(warm);
  const worker = new Worker(
    queueName,
    async (job) => {
      const seq = job.data.seq;
      if (seq >= 0 && seq < total && started[seq] === 0n) {
        started[seq] = now();
        count.add();
      } else if (seq < 0 && seq >= -warm && !warmed[-1 - seq]) {
        warmed[-1 - seq] = true;
        warmCount.add();
      }
    },
    { connection: { ...connection, maxRetriesPerRequest: null }, prefix, concurrency: workers },
  );
  worker.on('error', (err) => console.error('bullmq worker:', err.message));
  await worker.waitUntilReady();

  await paced(queue, now(), -warm, warm, () => {});
  if (!(await within(warmCount.done, settleMs))) {
    await worker.close();
    throw new Error(`${warm - warmCount.n} of ${warm} warm-up jobs had not started ${settleMs / 1000}s after the last add`);
  }

  const w = startWatch();
  await paced(queue, w.begin, 0, total, (seq) => {
    inserted[seq] = now();
  });
  stopWatch(w, res);
  res.jobs = total;

  await within(count.done, settleMs);
  const lat = [];
  for (let i = 0; i < total; i++) {
    if (started[i] !== 0n) lat.push(Number(started[i] > inserted[i] ? started[i] - inserted[i] : 0n));
  }
  res.latencies_ns = lat;
  await worker.close();
  if (lat.length < total) {
    throw new Error(`${total - lat.length} of ${total} jobs had not started ${settleMs / 1000}s after the last insert`);
  }
}

const workloads = { 'insert-many': insertMany, 'insert-one': insertOne, drain, latency };

async function main() {
  const run = workloads[required('workload')];
  if (!run) throw new Error(`unknown workload ${args.workload}`);
  const queue = new Queue(queueName, { connection, prefix });
  queue.on('error', (err) => console.error('bullmq queue:', err.message));
  await queue.waitUntilReady();
  const res = { jobs: 0 };
  try {
    await run(queue, res);
  } catch (err) {
    res.error = String(err?.message ?? err);
  }
  await queue.close();
  process.stdout.write(JSON.stringify(res) + '\n');
  process.exitCode = res.error ? 1 : 0;
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ error: String(err?.message ?? err) }) + '\n');
  process.exit(1);
});
