// The official TypeScript SDK v2 client's `client.listen()` against one of
// our servers (`subscriptions/listen`, 2026-07-28, pinned with
// versionNegotiation), as an application uses it: notification handlers
// registered with setNotificationHandler, then `listen(filter)`, then
// `await subscription.closed`.
//
//   node tests/interop/ts2_listen.mjs URL READY_FILE
//
// 0. Listens for the tools list and closes it at once (subscription.close:
//    the stream aborted and notifications/cancelled sent): it must close
//    'local', with no error (the server counts it `disconnected`).
// 1. Creates two baskets, A and B (each is a resource, `basket://<id>`).
// 2. Listens for `basket://A` and the resources list (one list kind); the
//    acknowledgement (honoredFilter) must honour both.
// 3. Adds an item to B (an update the stream did not ask for), then to A,
//    through this client: the first notification must be A's update (the
//    SDK dispatches whatever the stream carries, so a B update sent by the
//    server would come first: the order proves the server filtered it).
// 4. The same through a second client of the same principal: B, then A; the
//    next notification must be A's.
// 5. Writes READY_FILE and waits: the server is shut down (SIGTERM by the
//    caller), and the stream must end with the listen request's result
//    (`closed` resolves 'graceful', not 'remote'), with nothing between.
//    The raw messages of the connection (the transport's onmessage) must be
//    the ack, A's two updates, and the result, each stamped with the
//    listen request's id.
//
// Exits 0 on success (last line: what it saw); on failure prints
// "FAIL at step STEP: WHY", exits 1.
import { writeFileSync } from "node:fs";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, readyFile] = process.argv.slice(2);
if (!readyFile) {
  console.error("usage: node ts2_listen.mjs URL READY_FILE");
  process.exit(2);
}
const MODERN = "2026-07-28";
const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";
// Bounds against a server that never delivers: not measures.
const EVENT_TIMEOUT_MS = 20_000;
const END_TIMEOUT_MS = 60_000;

let step = "connect";
const say = (text) => console.log(`ts2-listen: ${text}`);
const fail = (why) => {
  console.log(`ts2-listen: FAIL at step ${step}: ${why}`);
  process.exit(1);
};
// `promise`, or an error after `ms` (the timer cleared either way, so it
// keeps the process alive no longer than the promise).
const within = (promise, ms, what) => {
  let timer;
  const bound = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
};

async function connect() {
  const client = new Client(
    { name: "sessionreg-interop-ts2-listen", version: "0.0.0" },
    { versionNegotiation: { mode: { pin: MODERN } } },
  );
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  const version = client.getNegotiatedProtocolVersion();
  if (version !== MODERN) fail(`negotiated ${version}, expected ${MODERN}`);
  return { client, transport };
}

async function createBasket(client) {
  const result = await client.callTool({ name: "basket_create", arguments: {} });
  const id = result.structuredContent?.basket;
  if (result.isError || typeof id !== "string") fail(`basket_create answered ${JSON.stringify(result)}`);
  return id;
}

async function add(client, basket, item) {
  const result = await client.callTool({ name: "basket_add", arguments: { basket, item } });
  if (result.isError) fail(`basket_add answered an error: ${JSON.stringify(result)}`);
}

try {
  const { client, transport } = await connect();
  const { client: second } = await connect();

  // Every raw message of this client's connection, in the order the
  // transport delivered them.
  const wire = [];
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    wire.push(message);
    deliver?.call(transport, message, extra);
  };

  // What the SDK dispatched to the application, in order; a waiter for the
  // next one.
  const dispatched = [];
  let wake = () => {};
  const note = (method) => (notification) => {
    dispatched.push({ method, uri: notification.params?.uri });
    wake();
  };
  for (const method of [
    "notifications/resources/updated",
    "notifications/resources/list_changed",
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
  ]) {
    client.setNotificationHandler(method, note(method));
  }
  let seen = 0;
  const nextDispatched = async (label) => {
    const arrived = new Promise((resolve) => {
      wake = resolve;
      if (dispatched.length > seen) resolve();
    });
    await within(arrived, EVENT_TIMEOUT_MS, "notification");
    const event = dispatched[seen++];
    say(`${label}: ${event.method} ${event.uri ?? ""}`);
    return event;
  };

  step = "listen, then close";
  const errors = [];
  client.onerror = (error) => errors.push(String(error));
  const first = await client.listen({ toolsListChanged: true });
  if (first.honoredFilter.toolsListChanged !== true) fail(`acknowledged ${JSON.stringify(first.honoredFilter)}`);
  await first.close();
  const how = await within(first.closed, EVENT_TIMEOUT_MS, "close");
  if (how !== "local") fail(`closed '${how}', expected 'local'`);
  if (errors.length > 0) fail(`the close (stream aborted, notifications/cancelled sent) gave errors: ${JSON.stringify(errors)}`);
  say(`a first subscription acknowledged, then closed by the client: '${how}'`);
  wire.length = 0;

  step = "basket_create";
  const a = await createBasket(client);
  const b = await createBasket(client);
  const uriA = `basket://${a}`;
  const uriB = `basket://${b}`;
  say(`${MODERN}; baskets A=${uriA} B=${uriB}`);

  step = "listen";
  const subscription = await client.listen({ resourcesListChanged: true, resourceSubscriptions: [uriA] });
  const honored = subscription.honoredFilter;
  if (honored.resourcesListChanged !== true || JSON.stringify(honored.resourceSubscriptions) !== JSON.stringify([uriA])) {
    fail(`acknowledged ${JSON.stringify(honored)}, asked for resourcesListChanged and [${uriA}]`);
  }
  say(`acknowledged: ${JSON.stringify(honored)}`);

  step = "update after basket_add (this client)";
  await add(client, b, "not asked for");
  await add(client, a, "apple");
  let event = await nextDispatched("after basket_add B then A (this client)");
  if (event.method !== "notifications/resources/updated" || event.uri !== uriA) {
    fail(`first notification ${JSON.stringify(event)}, expected resources/updated ${uriA}`);
  }

  step = "update after basket_add (a second client)";
  await add(second, b, "not asked for either");
  await add(second, a, "pear");
  event = await nextDispatched("after basket_add B then A (second client)");
  if (event.method !== "notifications/resources/updated" || event.uri !== uriA) {
    fail(`next notification ${JSON.stringify(event)}, expected resources/updated ${uriA}`);
  }

  if (errors.length > 0) fail(`the client reported errors: ${JSON.stringify(errors)}`);

  step = "graceful end";
  writeFileSync(readyFile, "ready\n");
  say("ready: waiting for the server to shut down");
  const cause = await within(subscription.closed, END_TIMEOUT_MS, "end of the stream");
  if (cause !== "graceful") fail(`the subscription closed '${cause}', expected 'graceful' (the listen request's result)`);
  if (dispatched.length !== 2) fail(`notifications after the last update: ${JSON.stringify(dispatched.slice(2))}`);
  say("closed: 'graceful'");

  step = "what the connection carried";
  const listenId = wire.find((m) => m.method === "notifications/subscriptions/acknowledged")?.params?._meta?.[SUBSCRIPTION_ID];
  // The notifications, and the listen request's response (not the other
  // requests' responses, which come through the same transport).
  const shape = wire.filter((m) => m.method !== undefined || m.id === listenId).map((m) => {
    const stamp = m.params?._meta?.[SUBSCRIPTION_ID] ?? m.result?._meta?.[SUBSCRIPTION_ID];
    if (stamp !== listenId) fail(`a message stamped ${JSON.stringify(stamp)}, not ${JSON.stringify(listenId)}: ${JSON.stringify(m)}`);
    if (m.method === "notifications/resources/updated") return m.params.uri === uriA ? "updated(A)" : `updated(${m.params.uri})`;
    if (m.method) return m.method.replace("notifications/", "");
    if (m.id === listenId && m.result) return `result(${m.result.resultType})`;
    return JSON.stringify(m);
  });
  const expected = ["subscriptions/acknowledged", "updated(A)", "updated(A)", "result(complete)"];
  if (JSON.stringify(shape) !== JSON.stringify(expected)) fail(`the connection carried ${JSON.stringify(shape)}, expected ${JSON.stringify(expected)}`);
  say(`the wire carried ${shape.join(", ")}, each stamped ${JSON.stringify(listenId)}`);

  step = "close";
  await client.close();
  await second.close();
  console.log(
    `ts2-listen: ${MODERN}, ack {resourcesListChanged, [basket A]}, A's update first after B's twice (two clients), ` +
      `result on shutdown (closed 'graceful')`,
  );
} catch (error) {
  fail(error?.stack ?? String(error));
}
