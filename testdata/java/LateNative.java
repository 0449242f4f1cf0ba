import com.github.luben.zstd.ZstdCompressCtx;

/**
 * Fixed-work workload for the overhead benchmark's late-native case: first ROUNDS/2 rounds of
 * Java arithmetic on THREADS threads; only then is a large JNI library loaded, as a jar ships
 * it (zstd-jni unpacks its 900 KB library to the temporary directory and deletes it at once),
 * and ROUNDS/2 rounds of zstd compression run on THREADS of zstd's own native worker threads,
 * which the library starts then. What the agent does when a library and native threads appear
 * mid-recording (code map, unwind table, kept copy, thread scan) shows up as extra CPU.
 * Usage: java -cp .:zstd-jni.jar LateNative ROUNDS THREADS   (ROUNDS 0 = start-up only)
 */
public class LateNative {
    static volatile long sink;

    static void javaRound() {
        long x = 1;
        for (int i = 0; i < 20_000_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        sink += x;
    }

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        int threads = Integer.parseInt(args[1]);
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            ts[t] = new Thread(() -> {
                for (int r = 0; r < rounds / 2; r++) {
                    javaRound();
                }
            }, "java-" + t);
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        if (rounds == 0) {
            return;
        }
        byte[] input = new byte[4 << 20];
        long x = 7;
        for (int i = 0; i < input.length; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            input[i] = (byte) ('a' + ((x >>> 60) & 7));
        }
        ZstdCompressCtx ctx = new ZstdCompressCtx();
        ctx.setLevel(6);
        ctx.setWorkers(threads);
        for (int r = 0; r < rounds / 2; r++) {
            sink += ctx.compress(input).length;
        }
        ctx.close();
        System.out.println(sink);
    }
}
