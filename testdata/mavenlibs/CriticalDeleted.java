import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The FFM part of {@code NativeLibs} (JDK 22+, compiled apart so that the rest runs on JDK 17):
 * our own frameless library ({@code critical.c}, {@code -Dnativelibs.critical=PATH}) copied to
 * a fresh temporary file, loaded with {@link SymbolLookup#libraryLookup(Path, Arena)}, and
 * deleted right after loading, as Netty's loader does; then {@code crit_hash} called through a
 * critical downcall ({@code Linker.Option.critical(false)}: the thread stays in the Java state
 * during the call) by {@link #criticalLoop}.
 */
public class CriticalDeleted {
    static volatile long sink;

    public static Runnable prepare() throws Exception {
        Path original = Path.of(System.getProperty("nativelibs.critical"));
        Path copy = Files.createTempFile("libcritical-", ".so");
        Files.copy(original, copy, StandardCopyOption.REPLACE_EXISTING);
        SymbolLookup lookup = SymbolLookup.libraryLookup(copy, Arena.global());
        Files.delete(copy);
        MethodHandle hash = Linker.nativeLinker().downcallHandle(
                lookup.find("crit_hash").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS,
                        ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG),
                Linker.Option.critical(false));
        MemorySegment buf = Arena.global().allocate(4096);
        for (int i = 0; i < 4096; i++) {
            buf.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + (i >>> 7)));
        }
        return () -> criticalLoop(hash, buf);
    }

    static void criticalLoop(MethodHandle hash, MemorySegment buf) {
        try {
            sink += (long) hash.invokeExact(buf, buf.byteSize(), 64L);
        } catch (Throwable t) {
            throw new RuntimeException(t);
        }
    }
}
