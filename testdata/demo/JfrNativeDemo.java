import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The program `jfrnative demo` records: four threads for a few seconds, three of them spending
 * their CPU in native code (our C, zlib, libc) called through JNI, one in plain Java.
 * Usage: java -Djava.library.path=DIR JfrNativeDemo SECONDS
 */
public class JfrNativeDemo {
    static native void prepare(int seed);
    static native long checksum(int rounds);
    static native long compress(int rounds);
    static native long sort(int rounds);

    static volatile long sink;

    static void checksumLoop(long deadline) {
        while (System.nanoTime() < deadline) {
            sink += checksum(8);
        }
    }

    static void compressLoop(long deadline) {
        while (System.nanoTime() < deadline) {
            sink += compress(1);
        }
    }

    static void sortLoop(long deadline) {
        while (System.nanoTime() < deadline) {
            sink += sort(1);
        }
    }

    static void javaLoop(long deadline) {
        Map<String, Integer> counts = new HashMap<>();
        List<String> words = new ArrayList<>();
        for (int i = 0; i < 5000; i++) {
            words.add("word" + (i * 7919 % 1000));
        }
        while (System.nanoTime() < deadline) {
            for (String w : words) {
                counts.merge(w, 1, Integer::sum);
            }
            sink += counts.size();
            counts.clear();
        }
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
        System.loadLibrary("jfrnative_demo");
        prepare(42);
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        Thread[] threads = {
            new Thread(() -> checksumLoop(deadline), "c-checksum"),
            new Thread(() -> compressLoop(deadline), "zlib-compress"),
            new Thread(() -> sortLoop(deadline), "libc-qsort"),
            new Thread(() -> javaLoop(deadline), "java-hashmap"),
        };
        for (Thread t : threads) {
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
    }
}
