import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * A producer that says what was acknowledged: sync sends from THREADS threads until stdin closes, one line each
 * on stdout (the fault tools read it):
 *
 * <pre>
 *   ACK  key epochMs msgId offsetMsgId queueId queueOffset     (SEND_OK)
 *   NOK  key epochMs status                                     (stored, not SEND_OK: not counted as acknowledged)
 *   FAIL key epochMs exceptionClass                             (no answer; the client's own retries are spent)
 * </pre>
 *
 * Usage: AckProducer NAMESRV TOPIC THREADS BODY_SIZE RETRIES [POLL_NAMESRV_MS]. The body starts with the key
 * ("key|"), so a consumer that sees only bodies can tell the messages apart.
 */
public class AckProducer {
    private static final Object OUT = new Object();

    private static void say(String line) {
        synchronized (OUT) {
            System.out.println(line);
            System.out.flush();
        }
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        int threads = Integer.parseInt(args[2]);
        int size = Integer.parseInt(args[3]);
        int retries = Integer.parseInt(args[4]);
        DefaultMQProducer producer = new DefaultMQProducer("AckProducerGroup");
        producer.setNamesrvAddr(namesrv);
        producer.setRetryTimesWhenSendFailed(retries);
        producer.setSendMsgTimeout(3000);
        if (args.length > 5) {
            producer.setPollNameServerInterval(Integer.parseInt(args[5]));
        }
        producer.start();
        AtomicBoolean stop = new AtomicBoolean();
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int tid = t;
            workers[t] = new Thread(() -> {
                for (long seq = 0; !stop.get(); seq++) {
                    String key = "t" + tid + "-" + seq;
                    byte[] body = new byte[Math.max(size, key.length() + 1)];
                    Arrays.fill(body, (byte) 'x');
                    byte[] head = (key + "|").getBytes(StandardCharsets.UTF_8);
                    System.arraycopy(head, 0, body, 0, head.length);
                    Message msg = new Message(topic, "TagA", key, body);
                    try {
                        SendResult r = producer.send(msg);
                        long now = System.currentTimeMillis();
                        if (r.getSendStatus() == SendStatus.SEND_OK) {
                            say("ACK " + key + " " + now + " " + r.getMsgId() + " " + r.getOffsetMsgId() + " "
                                + r.getMessageQueue().getQueueId() + " " + r.getQueueOffset());
                        } else {
                            say("NOK " + key + " " + now + " " + r.getSendStatus());
                        }
                    } catch (Exception e) {
                        say("FAIL " + key + " " + System.currentTimeMillis() + " " + e.getClass().getSimpleName());
                        try {
                            Thread.sleep(100);
                        } catch (InterruptedException ie) {
                            return;
                        }
                    }
                }
            }, "ack-producer-" + t);
            workers[t].start();
        }
        say("READY " + System.currentTimeMillis());
        while (System.in.read() >= 0) {
            // runs until stdin closes
        }
        stop.set(true);
        for (Thread w : workers) {
            w.join(10000);
        }
        producer.shutdown();
        say("DONE " + System.currentTimeMillis());
    }
}
