import java.io.OutputStream;
import java.io.PrintWriter;
import java.util.Arrays;
import org.eclipse.jdt.core.compiler.CompilationProgress;
import org.eclipse.jdt.internal.compiler.batch.Main;

/**
 * The Eclipse compiler (ecj, a large real Java program) run again and again on one thread (main)
 * for SECONDS of wall time: each round is what `java -jar ecj.jar ARGS...` does
 * ({@code Main.main} with the same arguments), without its System.exit. A compilation still
 * running when the time is up is cancelled (its CompilationProgress says so), so the JVM exits on
 * time. Its diagnostics are dropped.
 *
 * <p>Usage: {@code java -cp ecj.jar:DIR EcjLoop SECONDS ARGS...}, e.g. {@code EcjLoop 6 -11
 * -nowarn -proceedOnError -d OUT SRC}. Prints "rounds <n> cancelled <0|1>".
 */
public class EcjLoop {
    public static void main(String[] args) {
        final long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        String[] ecjArgs = Arrays.copyOfRange(args, 1, args.length);
        PrintWriter none = new PrintWriter(OutputStream.nullOutputStream());
        CompilationProgress progress = new CompilationProgress() {
            @Override public void begin(int remainingWork) {}
            @Override public void done() {}
            @Override public boolean isCanceled() { return System.nanoTime() >= end; }
            @Override public void setTaskName(String name) {}
            @Override public void worked(int workIncrement, int remainingWork) {}
        };
        int rounds = 0;
        while (System.nanoTime() < end) {
            new Main(none, none, false, null, progress).compile(ecjArgs);
            rounds++;
        }
        System.out.println("rounds " + rounds + " cancelled " + (progress.isCanceled() ? 1 : 0));
    }
}
