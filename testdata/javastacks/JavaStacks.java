import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Pure-Java work on the main thread for the Java-stack tests, no JNI.
 *
 * <ul>
 *   <li>{@code regex SECONDS}: compiles and runs many regular expressions over generated text
 *       (java.util.regex is JIT-heavy: deep, megamorphic node chains).
 *   <li>{@code inline SECONDS}: a hot loop in {@link #hot} calling the small {@link #leafSum},
 *       which the JIT compilers inline; run with -XX:+PrintCompilation -XX:+PrintInlining to see
 *       it.
 * </ul>
 * Prints "DONE n" at the end.
 */
public class JavaStacks {
    static volatile long sink;

    static String text(Random r, int words) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < words; i++) {
            int len = 2 + r.nextInt(9);
            for (int j = 0; j < len; j++) {
                b.append((char) ('a' + r.nextInt(26)));
            }
            b.append(r.nextInt(7) == 0 ? " " + r.nextInt(100000) + "@x.org " : " ");
        }
        return b.toString();
    }

    static long regex(double seconds) {
        Random r = new Random(42);
        String[] patterns = {
            "([a-z]+)\\s+(\\d+)@([a-z]+)\\.org",
            "\\b(\\w{3,5})\\b(?=\\s+\\d)",
            "(?:ab|cd|ef)+[g-k]*",
            "([aeiou]{2,})[^aeiou ]+\\1?",
            "\\d{2,}(?!@)",
        };
        List<Pattern> compiled = new ArrayList<>();
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        long matches = 0;
        int round = 0;
        while (System.nanoTime() < deadline) {
            String t = text(r, 2000);
            // New patterns now and then, as programs build them at run time.
            String p = patterns[round % patterns.length] + (round % 3 == 0 ? "|z{" + (1 + round % 4) + "}" : "");
            compiled.add(Pattern.compile(p));
            if (compiled.size() > 50) {
                compiled.remove(0);
            }
            for (Pattern pattern : compiled) {
                Matcher m = pattern.matcher(t);
                while (m.find()) {
                    matches += m.end() - m.start();
                }
            }
            round++;
        }
        return matches;
    }

    /**
     * Small enough to be inlined into {@link #hot} by C1 and C2. Its loop (a long counter with a
     * data-dependent bound) keeps a safepoint poll inside it, so that compiled code has debug
     * information in leafSum's own scope: a sample there can name it.
     */
    static int leafSum(int[] a, int i) {
        int v = a[i];
        for (long k = 0; k < (v & 7) + 4; k++) {
            v = (v * 31) ^ (v >>> 3);
        }
        return v;
    }

    static long hot(int[] a) {
        long s = 0;
        for (int i = 0; i < a.length; i++) {
            s += leafSum(a, i);
        }
        return s;
    }

    static long inline(double seconds) {
        int[] a = new int[4096];
        for (int i = 0; i < a.length; i++) {
            a[i] = i * 7;
        }
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        long s = 0;
        while (System.nanoTime() < deadline) {
            for (int k = 0; k < 100; k++) {
                s += hot(a);
            }
        }
        return s;
    }

    public static void main(String[] args) {
        double seconds = Double.parseDouble(args[1]);
        long result = args[0].equals("regex") ? regex(seconds) : inline(seconds);
        sink = result;
        System.out.println("DONE " + result);
    }
}
