'use strict';
// ali-ons push consumer driver: receives args.expect messages of args.topic (or times out).
const { Consumer } = require('ali-ons');
const { emit, finish, watchdog, args, clientOptions, errorText } = require('./node_common');

async function main() {
  const a = args();
  const received = [];
  const attempts = [];
  const failed = new Set();
  const result = { messages: received, attempts, started: false, errors: [] };
  watchdog(a.deadline || 90, result);
  let consumer;
  try {
    consumer = new Consumer(Object.assign(clientOptions(a), {
      consumerGroup: a.group,
      isBroadcast: !!a.broadcast,
      persistConsumerOffsetInterval: 1000,
      rebalanceInterval: 2000,
    }));
    consumer.on('error', err => result.errors.push(errorText(err)));
    let done;
    const enough = new Promise(resolve => { done = resolve; });
    consumer.subscribe(a.topic, a.expression || '*', async msg => {
      const item = {
        topic: msg.topic,
        tags: msg.tags === undefined ? null : msg.tags,
        keys: msg.keys === undefined ? null : msg.keys,
        body: msg.body ? msg.body.toString('utf8') : '',
        msg_id: msg.msgId,
        queue_id: msg.queueId,
        queue_offset: Number(msg.queueOffset),
        reconsume_times: msg.reconsumeTimes,
        born_timestamp: Number(msg.bornTimestamp),
        store_timestamp: Number(msg.storeTimestamp),
        properties: Object.assign({}, msg.properties),
      };
      attempts.push(item);
      if (a.fail_first && !failed.has(item.keys)) {
        // the first delivery of each message fails: the broker must deliver it again
        failed.add(item.keys);
        return Consumer.ACTION_RETRY;
      }
      received.push(item);
      if (received.length >= a.expect) done();
    });
    await consumer.ready();
    result.started = true;
    process.stderr.write('CONSUMER STARTED\n');
    await Promise.race([ enough, new Promise(resolve => setTimeout(resolve, (a.timeout || 40) * 1000)) ]);
    await new Promise(resolve => setTimeout(resolve, (a.linger || 0.5) * 1000));
    emit(result);
    if (!a.skip_shutdown) {
      await consumer.close();
      process.stdout.write('SHUTDOWN ok\n');
    }
  } catch (err) {
    result.error = errorText(err);
    result.traceback = err && err.stack;
  }
  finish(result, 0);
}

main();
