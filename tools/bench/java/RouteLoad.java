// rocketpy bench tool (our own code, not Apache's): N threads asking the NameServer for a topic's
// route (GET_ROUTEINFO_BY_TOPIC through the client's MQClientAPIImpl, all threads sharing the one
// NameServer connection of an MQClientInstance), as fast as the answers come back.
//
//   java -cp "$(bin/java-cp.sh):CLASSES" RouteLoad -n NAMESRV -t TOPIC [-w 32] [--warmup 5] [--seconds 15]
//
// First sends one message to TOPIC (so a broker with autoCreateTopicEnable creates it and registers
// it with the NameServer) and waits until the NameServer answers a route for it (--seconds 0: then
// prints "RouteLoad created topic=..." and exits). Prints
// "MEASURE_START" / "MEASURE_END" around the measured window, then one result line:
//   RouteLoad count=N errors=E seconds=S rps=R p50_ms=.. p99_ms=.. max_ms=.. brokers=B queues=Q
// Header serialization is the client default (JSON) unless -Drocketmq.serialize.type=ROCKETMQ.
import java.util.Arrays;

import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;

public class RouteLoad {
    static volatile int phase; // 0 warm-up, 1 measuring, 2 done

    static final class Recorder {
        long[] lat = new long[1 << 16];
        int n;
        long errors;

        void add(long nanos) {
            if (n == lat.length) {
                lat = Arrays.copyOf(lat, n * 2);
            }
            lat[n++] = nanos;
        }
    }

    static String arg(String[] args, String name, String dflt) {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return args[i + 1];
            }
        }
        return dflt;
    }

    public static void main(String[] args) throws Exception {
        String namesrv = arg(args, "-n", "127.0.0.1:9876");
        String topic = arg(args, "-t", "BenchmarkTest");
        int threads = Integer.parseInt(arg(args, "-w", "32"));
        double warmup = Double.parseDouble(arg(args, "--warmup", "5"));
        double seconds = Double.parseDouble(arg(args, "--seconds", "15"));

        DefaultMQProducer producer = new DefaultMQProducer("bench_route_load");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("RouteLoad" + System.nanoTime());
        producer.start();
        long giveUp = System.nanoTime() + 60_000_000_000L;
        while (true) { // a broker just started may time out the first sends
            try {
                producer.send(new Message(topic, "route".getBytes("UTF-8")));
                break;
            } catch (Exception e) {
                if (System.nanoTime() > giveUp) {
                    throw e;
                }
                Thread.sleep(500);
            }
        }
        MQClientAPIImpl api = producer.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl();
        TopicRouteData route = null;
        while (route == null) {
            try {
                route = api.getTopicRouteInfoFromNameServer(topic, 3000);
            } catch (Exception e) {
                if (System.nanoTime() > giveUp) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
        int brokers = route.getBrokerDatas().size();
        int queues = route.getQueueDatas().size();
        if (seconds <= 0) { // --seconds 0: only create the topic
            System.out.printf("RouteLoad created topic=%s brokers=%d queues=%d%n", topic, brokers, queues);
            System.out.flush();
            producer.shutdown();
            System.exit(0);
        }

        Recorder[] recs = new Recorder[threads];
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            Recorder rec = recs[t] = new Recorder();
            ts[t] = new Thread(() -> {
                while (phase < 2) {
                    long t0 = System.nanoTime();
                    boolean ok;
                    try {
                        ok = api.getTopicRouteInfoFromNameServer(topic, 3000) != null;
                    } catch (Exception e) {
                        ok = false;
                    }
                    long dt = System.nanoTime() - t0;
                    if (phase == 1) {
                        if (ok) {
                            rec.add(dt);
                        } else {
                            rec.errors++;
                        }
                    }
                }
            }, "route-" + t);
            ts[t].setDaemon(true);
            ts[t].start();
        }
        Thread.sleep((long) (warmup * 1000));
        long start = System.nanoTime();
        phase = 1;
        System.out.println("MEASURE_START");
        System.out.flush();
        Thread.sleep((long) (seconds * 1000));
        phase = 2;
        long stop = System.nanoTime();
        System.out.println("MEASURE_END");
        System.out.flush();
        for (Thread t : ts) {
            t.join(10000);
        }
        int n = 0;
        long errors = 0;
        for (Recorder r : recs) {
            n += r.n;
            errors += r.errors;
        }
        long[] all = new long[n];
        int at = 0;
        for (Recorder r : recs) {
            System.arraycopy(r.lat, 0, all, at, r.n);
            at += r.n;
        }
        Arrays.sort(all);
        double secs = (stop - start) / 1e9;
        System.out.printf(java.util.Locale.ROOT,
            "RouteLoad count=%d errors=%d seconds=%.3f rps=%.1f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f brokers=%d queues=%d%n",
            n, errors, secs, n / secs, n == 0 ? Double.NaN : all[n / 2] / 1e6,
            n == 0 ? Double.NaN : all[(int) Math.min(n - 1, (long) (n * 0.99))] / 1e6,
            n == 0 ? Double.NaN : all[n - 1] / 1e6, brokers, queues);
        System.out.flush();
        producer.shutdown();
        System.exit(0);
    }
}
