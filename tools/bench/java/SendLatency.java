// rocketpy bench tool (our own code, not Apache's): synchronous sends from N threads sharing one
// DefaultMQProducer (one connection per broker, ROCKETMQ binary headers, like the benchmark Producer),
// recording the latency of every send completed inside the measured window.
//
//   java -cp "$(bin/java-cp.sh):CLASSES" SendLatency -n NAMESRV -t TOPIC [-w 32] [-s 1024]
//        [--warmup 5] [--seconds 15] [--messages 0]
//
// Prints "MEASURE_START" when the warm-up ends and "MEASURE_END" when the window closes (a harness
// can read server CPU when these lines arrive), then one result line:
//   SendLatency count=N errors=E seconds=S tps=T p50_ms=.. p90_ms=.. p99_ms=.. p999_ms=.. max_ms=..
// count = sends acknowledged with SEND_OK inside the window; errors = failed sends in it.
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

public class SendLatency {
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

    static double pct(long[] sorted, int n, double p) {
        if (n == 0) {
            return Double.NaN;
        }
        int i = (int) Math.min(n - 1, (long) (n * p));
        return sorted[i] / 1e6;
    }

    public static void main(String[] args) throws Exception {
        System.setProperty(RemotingCommand.SERIALIZE_TYPE_PROPERTY, SerializeType.ROCKETMQ.name());
        String namesrv = arg(args, "-n", "127.0.0.1:9876");
        String topic = arg(args, "-t", "BenchmarkTest");
        int threads = Integer.parseInt(arg(args, "-w", "32"));
        int size = Integer.parseInt(arg(args, "-s", "1024"));
        double warmup = Double.parseDouble(arg(args, "--warmup", "5"));
        double seconds = Double.parseDouble(arg(args, "--seconds", "15"));
        long limit = Long.parseLong(arg(args, "--messages", "0"));

        byte[] body = new byte[size];
        java.util.Random rnd = new java.util.Random(42);
        for (int i = 0; i < size; i++) {
            body[i] = (byte) ('a' + rnd.nextInt(26));
        }
        DefaultMQProducer producer = new DefaultMQProducer("bench_send_latency");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("SendLatency" + System.nanoTime());
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.start();

        Recorder[] recs = new Recorder[threads];
        Thread[] ts = new Thread[threads];
        AtomicLong measured = new AtomicLong();
        for (int t = 0; t < threads; t++) {
            Recorder rec = recs[t] = new Recorder();
            ts[t] = new Thread(() -> {
                while (phase < 2) {
                    long t0 = System.nanoTime();
                    boolean ok;
                    try {
                        SendResult r = producer.send(new Message(topic, body));
                        ok = r.getSendStatus() == SendStatus.SEND_OK;
                    } catch (Exception e) {
                        ok = false;
                    }
                    long dt = System.nanoTime() - t0;
                    if (phase == 1) {
                        if (ok) {
                            rec.add(dt);
                            if (limit > 0 && measured.incrementAndGet() >= limit) {
                                phase = 2;
                            }
                        } else {
                            rec.errors++;
                        }
                    }
                }
            }, "send-" + t);
            ts[t].setDaemon(true);
            ts[t].start();
        }
        Thread.sleep((long) (warmup * 1000));
        long start = System.nanoTime();
        phase = 1;
        System.out.println("MEASURE_START");
        System.out.flush();
        long end = start + (long) (seconds * 1e9);
        while (phase == 1 && System.nanoTime() < end) {
            Thread.sleep(5);
        }
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
            "SendLatency count=%d errors=%d seconds=%.3f tps=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f%n",
            n, errors, secs, n / secs, pct(all, n, 0.5), pct(all, n, 0.9), pct(all, n, 0.99), pct(all, n, 0.999),
            n == 0 ? Double.NaN : all[n - 1] / 1e6);
        System.out.flush();
        producer.shutdown();
        System.exit(0);
    }
}
