import java.util.zip.CRC32;
import java.util.zip.Deflater;

/**
 * Fixed-work CPU-bound workload for the overhead benchmark: THREADS threads each run ROUNDS
 * rounds of Java arithmetic and JDK native code (zlib deflate through java.util.zip, CRC32).
 * The work is fixed, so any overhead shows up as extra CPU and wall time.
 * Usage: java Workload ROUNDS THREADS   (ROUNDS 0 = start-up only)
 */
public class Workload {
    static volatile long sink;

    static void round(byte[] data, byte[] out) {
        long x = 1;
        for (int i = 0; i < 2_000_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            data[i & (data.length - 1)] = (byte) (x >>> 59);
        }
        Deflater d = new Deflater(6);
        d.setInput(data);
        d.finish();
        int n = 0;
        while (!d.finished()) {
            n += d.deflate(out);
        }
        d.end();
        CRC32 crc = new CRC32();
        crc.update(data);
        sink += x + n + crc.getValue();
    }

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        int threads = Integer.parseInt(args[1]);
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            ts[t] = new Thread(() -> {
                byte[] data = new byte[1 << 18];
                byte[] out = new byte[1 << 19];
                for (int r = 0; r < rounds; r++) {
                    round(data, out);
                }
            }, "work-" + t);
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
    }
}
