// The JDK's own cost of committing a 3-field JFR event, for flightrec's
// peer bench (benches/peers.rs): the same shape as flightrec's bench event
// (a long, an int, a double), recorded by an in-process Recording. Prints
// one line: `java commit ns: <median of per-round ns per event>`.
import java.util.Arrays;

import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Recording;

public class Commit {
    @Name("bench.Emit")
    @Label("Emit")
    static class Emit extends Event {
        long a;
        int b;
        double c;
    }

    static void batch(long n) {
        for (long i = 0; i < n; i++) {
            Emit e = new Emit();
            e.a = i;
            e.b = 7;
            e.c = 0.5;
            e.commit();
        }
    }

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        long batch = Long.parseLong(args[1]);
        try (Recording r = new Recording()) {
            r.enable(Emit.class).withoutStackTrace().withoutThreshold();
            r.setToDisk(true);
            r.setMaxSize(64L << 20);
            r.start();
            // Warm up until the JIT has compiled the loop.
            for (int i = 0; i < 20; i++) {
                batch(batch);
            }
            double[] perEvent = new double[rounds];
            for (int i = 0; i < rounds; i++) {
                long t0 = System.nanoTime();
                batch(batch);
                perEvent[i] = (System.nanoTime() - t0) / (double) batch;
            }
            Arrays.sort(perEvent);
            System.out.println("java commit ns: " + perEvent[rounds / 2]);
            r.stop();
        }
    }
}
