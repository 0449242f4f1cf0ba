import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;

/**
 * Loads its JNI library as a jar's loader does (copied to a fresh file in the temporary
 * directory, loaded, deleted at once) and then spends its time in it for SECONDS.
 *
 * usage: java Gone LIBRARY SECONDS
 */
public class Gone {
    static native long spin(long n);

    public static void main(String[] args) throws Exception {
        Path copy = Files.createTempFile("libgone", ".so");
        Files.copy(Paths.get(args[0]), copy, StandardCopyOption.REPLACE_EXISTING);
        System.load(copy.toString());
        Files.delete(copy);
        System.out.println("loaded and deleted " + copy);
        long end = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000_000L;
        long sum = 0;
        while (System.nanoTime() < end) {
            sum += work(200_000);
        }
        System.out.println(sum);
    }

    static long work(long n) {
        return spin(n);
    }
}
