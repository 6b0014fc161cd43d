// Driver of the official Java client (rocketmq-client 4.9.x) for the compat tests.
// Compiled at test time against ROCKETMQ_JAVA_CLASSPATH. Usage:
//   java CompatClient produce NAMESRV TOPIC GROUP COUNT RUN_ID TAG_PREFIX [NAMESPACE]
//   java CompatClient consume NAMESRV TOPIC GROUP EXPECT RUN_ID EXPRESSION TIMEOUT_S [NAMESPACE]
// Messages are made as compat_tests/harness.py sample_messages() makes them; the result is
// printed as one line "RESULT {json}", then "SHUTDOWN ok" once the client has shut down.

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class CompatClient {
    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c)); else b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static String body(String runId, int i) {
        StringBuilder x = new StringBuilder();
        for (int k = 0; k < i * 7; k++) x.append('x');
        return runId + " message " + i + " h\u00e9llo \u4e16\u754c " + x;
    }

    static void produce(String[] a) throws Exception {
        String namesrv = a[1], topic = a[2], group = a[3], runId = a[5], prefix = a[6];
        int count = Integer.parseInt(a[4]);
        DefaultMQProducer producer = a.length > 7 ? new DefaultMQProducer(a[7], group) : new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(5000);
        producer.start();
        List<String> results = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, prefix + (i % 2), "key-" + runId + "-" + i,
                    body(runId, i).getBytes(StandardCharsets.UTF_8));
            msg.putUserProperty("compat_index", String.valueOf(i));
            msg.putUserProperty("compat_run", runId);
            try {
                SendResult r = producer.send(msg);
                results.add("{\"status\":" + q(r.getSendStatus().name()) + ",\"msg_id\":" + q(r.getMsgId())
                        + ",\"topic\":" + q(r.getMessageQueue().getTopic()) + ",\"msg_topic\":" + q(msg.getTopic())
                        + ",\"offset_msg_id\":" + q(r.getOffsetMsgId())
                        + ",\"queue_id\":" + r.getMessageQueue().getQueueId()
                        + ",\"broker_name\":" + q(r.getMessageQueue().getBrokerName())
                        + ",\"offset\":" + r.getQueueOffset() + "}");
            } catch (Exception e) {
                results.add("{\"error\":" + q(e.toString()) + "}");
            }
        }
        System.out.println("RESULT {\"started\":true,\"results\":[" + String.join(",", results) + "]}");
        System.out.flush();
        producer.shutdown();
        System.out.println("SHUTDOWN ok");
    }

    static void consume(String[] a) throws Exception {
        String namesrv = a[1], topic = a[2], group = a[3], expression = a[6];
        int expect = Integer.parseInt(a[4]);
        long timeout = Long.parseLong(a[7]);
        List<String> got = new ArrayList<>();
        CountDownLatch latch = new CountDownLatch(expect);
        DefaultMQPushConsumer consumer = a.length > 8 ? new DefaultMQPushConsumer(a[8], group)
                : new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.subscribe(topic, expression);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                StringBuilder props = new StringBuilder("{");
                for (Map.Entry<String, String> e : m.getProperties().entrySet()) {
                    if (props.length() > 1) props.append(',');
                    props.append(q(e.getKey())).append(':').append(q(e.getValue()));
                }
                props.append('}');
                synchronized (got) {
                    got.add("{\"topic\":" + q(m.getTopic()) + ",\"tags\":" + q(m.getTags()) + ",\"keys\":" + q(m.getKeys())
                            + ",\"body\":" + q(new String(m.getBody(), StandardCharsets.UTF_8))
                            + ",\"msg_id\":" + q(m.getMsgId()) + ",\"queue_id\":" + m.getQueueId()
                            + ",\"queue_offset\":" + m.getQueueOffset() + ",\"reconsume_times\":" + m.getReconsumeTimes()
                            + ",\"properties\":" + props + "}");
                }
                latch.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        System.err.println("CONSUMER STARTED");
        latch.await(timeout, TimeUnit.SECONDS);
        Thread.sleep(500);
        synchronized (got) {
            System.out.println("RESULT {\"started\":true,\"messages\":[" + String.join(",", got) + "]}");
        }
        System.out.flush();
        consumer.shutdown();
        System.out.println("SHUTDOWN ok");
    }

    public static void main(String[] a) throws Exception {
        try {
            if (a[0].equals("produce")) produce(a); else consume(a);
        } catch (Throwable t) {
            System.out.println("RESULT {\"error\":" + q(t.toString()) + "}");
        }
        System.out.flush();
        System.exit(0);
    }
}
