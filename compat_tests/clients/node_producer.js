'use strict';
// ali-ons producer driver: sends args.messages to args.topic, prints each send result.
const { Producer, Message } = require('ali-ons');
const { emit, finish, watchdog, args, clientOptions, errorText } = require('./node_common');

async function main() {
  const a = args();
  const result = { results: [], started: false, errors: [] };
  watchdog(a.deadline || 60, result);
  try {
    const producer = new Producer(Object.assign(clientOptions(a), {
      producerGroup: a.group,
      sendMsgTimeout: a.send_timeout_ms || 5000,
    }));
    producer.on('error', err => result.errors.push(errorText(err)));
    await producer.ready();
    result.started = true;
    for (const spec of a.messages) {
      const msg = new Message(a.topic, spec.tags || null, Buffer.from(spec.body, 'utf8'));
      if (spec.keys) msg.keys = [ spec.keys ];
      for (const [ k, v ] of Object.entries(spec.properties || {})) msg.properties[k] = v;
      if (spec.delay_level) msg.delayTimeLevel = spec.delay_level;
      try {
        const r = await producer.send(msg);
        result.results.push({
          status: r.sendStatus,
          msg_id: r.msgId,
          queue_id: Number(r.messageQueue.queueId),
          broker_name: r.messageQueue.brokerName,
          offset: r.queueOffset,
        });
      } catch (err) {
        result.results.push({ error: errorText(err) });
      }
    }
    emit(result);
    if (!a.skip_shutdown) {
      await producer.close();
      process.stdout.write('SHUTDOWN ok\n');
    }
  } catch (err) {
    result.error = errorText(err);
    result.traceback = err && err.stack;
  }
  finish(result, 0);
}

main();
