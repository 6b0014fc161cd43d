import java.nio.charset.StandardCharsets;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * A push consumer whose listener takes SLEEP_MS per message and says what it consumed, one line each on stdout
 * (tools/faults/push_consumer_kill.py reads it):
 *
 * <pre>
 *   READY                          (started)
 *   C queueId queueOffset body     (the listener is about to return CONSUME_SUCCESS for it)
 * </pre>
 *
 * Usage: SlowPushConsumer NAMESRV TOPIC GROUP SLEEP_MS. Consumes from the first offset, with the default
 * consume threads (20), batch size (1) and offset persistence (every 5 s); shuts down when stdin closes.
 */
public class SlowPushConsumer {
    private static final Object OUT = new Object();

    private static void say(String line) {
        synchronized (OUT) {
            System.out.println(line);
            System.out.flush();
        }
    }

    public static void main(String[] args) throws Exception {
        final long sleepMs = Long.parseLong(args[3]);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[2]);
        consumer.setNamesrvAddr(args[0]);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(args[1], "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            if (sleepMs > 0) {
                try {
                    Thread.sleep(sleepMs * msgs.size());
                } catch (InterruptedException e) {
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            for (MessageExt m : msgs) {
                say("C " + m.getQueueId() + " " + m.getQueueOffset() + " "
                    + new String(m.getBody(), StandardCharsets.UTF_8));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        say("READY");
        while (System.in.read() >= 0) {
            // until stdin closes
        }
        consumer.shutdown();
    }
}
