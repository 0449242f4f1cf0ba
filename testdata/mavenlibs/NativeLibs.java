import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdCompressCtx;
import com.sun.jna.Native;
import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.netty.handler.ssl.util.InsecureTrustManagerFactory;
import java.io.FileInputStream;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.KeyStore;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLEngineResult.HandshakeStatus;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Factory;
import org.xerial.snappy.Snappy;

/**
 * Hot loops inside JNI libraries as Maven jars ship them (issue 39): each jar unpacks its
 * native library into a temporary directory, loads it, and deletes it (right after loading, or
 * at JVM exit). One Java thread per part, each with a method of its own, for SECONDS of wall
 * time; all loaders run first (every part initializes its library before any loop starts).
 *
 * <ul>
 *   <li>snappy: snappy-java's {@code Snappy.compress}/{@code uncompress} ({@link #snappyLoop}).
 *   <li>lz4: lz4-java's native high compressor ({@link #lz4Loop}).
 *   <li>zstd: zstd-jni's {@code Zstd.compress} ({@link #zstdLoop}).
 *   <li>zstd-mt: zstd-jni with two workers: zstd's own pthreads compress, started by the
 *       library ({@link #zstdWorkersLoop}; the Java thread mostly waits).
 *   <li>sqlite: sqlite-jdbc, queries on an in-memory database ({@link #sqliteLoop}).
 *   <li>tls: netty-tcnative (BoringSSL) through Netty's OpenSSL engine: a TLS handshake and
 *       64 KiB of data each round, in memory ({@link #tlsLoop}); needs
 *       {@code -Dnativelibs.keystore=PKCS12 file} (password {@code changeit}).
 *   <li>jna: JNA's direct mapping of zlib's crc32 on 256-byte buffers, most of the time in JNA's
 *       own dispatch library ({@link #jnaLoop}).
 *   <li>critical: on JDK 22+, {@code CriticalDeleted}: an FFM critical downcall into our own
 *       library (frameless), loaded from a temporary copy deleted right after loading; needs
 *       {@code -Dnativelibs.critical=libcritical.so}.
 * </ul>
 *
 * <p>After every library is loaded, prints each mapping of the process whose file is in a
 * temporary directory ({@code MAPPED <path>}, with {@code (deleted)} when the file is gone
 * already, as /proc/self/maps says), and at the end each thread's CPU time ({@code CPU <name>
 * <ns>}).
 *
 * <p>Usage: java -cp LIBS/*:DIR NativeLibs SECONDS [part,part,...]
 */
public class NativeLibs {
    static final String ALL = "snappy,lz4,zstd,zstd-mt,sqlite,tls,jna,critical";
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        List<String> parts = Arrays.asList((args.length > 1 ? args[1] : ALL).split(","));
        List<Runnable> loops = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (String part : parts) {
            Runnable loop = prepare(part);
            if (loop != null) {
                loops.add(loop);
                names.add(part + "-worker");
            }
        }
        printTemporaryMappings();
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        for (int i = 0; i < loops.size(); i++) {
            Runnable loop = loops.get(i);
            String name = names.get(i);
            Thread t = new Thread(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                while (System.nanoTime() < deadline) {
                    loop.run();
                }
                System.out.println("CPU " + name + " " + mx.getCurrentThreadCpuTime());
            }, name);
            threads.add(t);
            t.start();
        }
        start.countDown();
        for (Thread t : threads) {
            t.join();
        }
        System.out.println("DONE " + String.join(",", names));
    }

    /** Loads the part's library and returns one round of its loop; null for a part skipped. */
    static Runnable prepare(String part) throws Exception {
        switch (part) {
            case "snappy": {
                byte[] input = data(1 << 16);
                snappyLoop(input); // loads the library
                return () -> snappyLoop(input);
            }
            case "lz4": {
                LZ4Compressor c = LZ4Factory.nativeInstance().highCompressor(9);
                byte[] input = data(1 << 16);
                byte[] out = new byte[c.maxCompressedLength(input.length)];
                return () -> lz4Loop(c, input, out);
            }
            case "zstd": {
                byte[] input = data(1 << 16);
                zstdLoop(input); // loads the library
                return () -> zstdLoop(input);
            }
            case "zstd-mt": {
                ZstdCompressCtx ctx = new ZstdCompressCtx();
                ctx.setLevel(6);
                ctx.setWorkers(2);
                // zstd's multithreaded mode cuts its input in jobs of at least 512 KiB.
                byte[] input = data(4 << 20);
                return () -> zstdWorkersLoop(ctx, input);
            }
            case "sqlite":
                return sqlite();
            case "tls":
                return tls();
            case "jna":
                Native.register(Zlib.class, "z");
                return () -> jnaLoop();
            case "critical":
                return critical();
            default:
                throw new IllegalArgumentException("unknown part " + part + " (of " + ALL + ")");
        }
    }

    /** Compressible bytes: runs of words with some noise. */
    static byte[] data(int size) {
        byte[] b = new byte[size];
        long x = 0x9E3779B97F4A7C15L;
        for (int i = 0; i < size; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            b[i] = (byte) ((i % 64 < 40) ? 'a' + (i / 64) % 20 : x);
        }
        return b;
    }

    static void snappyLoop(byte[] input) {
        try {
            byte[] packed = Snappy.compress(input);
            sink += Snappy.uncompress(packed).length;
        } catch (java.io.IOException e) {
            throw new RuntimeException(e);
        }
    }

    static void lz4Loop(LZ4Compressor c, byte[] input, byte[] out) {
        sink += c.compress(input, 0, input.length, out, 0, out.length);
    }

    static void zstdLoop(byte[] input) {
        sink += Zstd.compress(input, 5).length;
    }

    static void zstdWorkersLoop(ZstdCompressCtx ctx, byte[] input) {
        sink += ctx.compress(input).length;
    }

    static Runnable sqlite() throws Exception {
        Connection db = DriverManager.getConnection("jdbc:sqlite::memory:");
        try (Statement st = db.createStatement()) {
            st.executeUpdate("CREATE TABLE t(a INTEGER, b INTEGER, c TEXT)");
            st.executeUpdate("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n"
                    + " WHERE i < 20000) INSERT INTO t SELECT i, i * 7919 % 10007,"
                    + " printf('row-%d-%x', i, i * 31) FROM n");
        }
        return () -> sqliteLoop(db);
    }

    static void sqliteLoop(Connection db) {
        try (Statement st = db.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*), sum(a * b % 97),"
                        + " max(length(c)) FROM t WHERE c LIKE '%7%' AND b % 3 <> 1")) {
            while (rs.next()) {
                sink += rs.getLong(1) + rs.getLong(2);
            }
        } catch (java.sql.SQLException e) {
            throw new RuntimeException(e);
        }
    }

    static Runnable tls() throws Exception {
        String path = System.getProperty("nativelibs.keystore");
        if (path == null) {
            throw new IllegalStateException("tls needs -Dnativelibs.keystore=FILE.p12");
        }
        char[] password = "changeit".toCharArray();
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = new FileInputStream(path)) {
            ks.load(in, password);
        }
        KeyManagerFactory kmf =
                KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, password);
        SslContext server = SslContextBuilder.forServer(kmf).sslProvider(SslProvider.OPENSSL)
                .build();
        SslContext client = SslContextBuilder.forClient().sslProvider(SslProvider.OPENSSL)
                .trustManager(InsecureTrustManagerFactory.INSTANCE).build();
        return () -> tlsLoop(server, client);
    }

    /** One TLS session in memory: handshake, then 64 KiB from the client to the server. */
    static void tlsLoop(SslContext server, SslContext client) {
        SSLEngine c = client.newEngine(ByteBufAllocator.DEFAULT);
        SSLEngine s = server.newEngine(ByteBufAllocator.DEFAULT);
        try {
            int packet = Math.max(c.getSession().getPacketBufferSize(),
                    s.getSession().getPacketBufferSize());
            ByteBuffer cToS = ByteBuffer.allocate(packet * 4);
            ByteBuffer sToC = ByteBuffer.allocate(packet * 4);
            ByteBuffer appIn = ByteBuffer.allocate(1 << 17);
            ByteBuffer empty = ByteBuffer.allocate(0);
            c.beginHandshake();
            s.beginHandshake();
            for (int i = 0; i < 100 && !(done(c) && done(s)); i++) {
                step(c, empty, cToS, sToC, appIn);
                step(s, empty, sToC, cToS, appIn);
            }
            ByteBuffer data = ByteBuffer.wrap(data(1 << 16));
            while (data.hasRemaining()) {
                c.wrap(data, cToS);
                cToS.flip();
                while (cToS.hasRemaining()) {
                    SSLEngineResult r = s.unwrap(cToS, appIn);
                    if (r.bytesConsumed() == 0) {
                        break;
                    }
                }
                cToS.compact();
                appIn.clear();
            }
            sink += appIn.position();
        } catch (Exception e) {
            throw new RuntimeException(e);
        } finally {
            io.netty.util.ReferenceCountUtil.release(c);
            io.netty.util.ReferenceCountUtil.release(s);
        }
    }

    static boolean done(SSLEngine e) {
        HandshakeStatus h = e.getHandshakeStatus();
        return h == HandshakeStatus.FINISHED || h == HandshakeStatus.NOT_HANDSHAKING;
    }

    /** Unwraps what the peer sent into `engine`, runs its tasks, and wraps what it sends. */
    static void step(SSLEngine engine, ByteBuffer empty, ByteBuffer out, ByteBuffer in,
            ByteBuffer appIn) throws Exception {
        in.flip();
        while (in.hasRemaining()) {
            SSLEngineResult r = engine.unwrap(in, appIn);
            runTasks(engine);
            if (r.bytesConsumed() == 0) {
                break;
            }
        }
        in.compact();
        appIn.clear();
        for (int i = 0; i < 8; i++) {
            SSLEngineResult r = engine.wrap(empty, out);
            runTasks(engine);
            if (r.bytesProduced() == 0) {
                break;
            }
        }
    }

    static void runTasks(SSLEngine engine) {
        Runnable task;
        while ((task = engine.getDelegatedTask()) != null) {
            task.run();
        }
    }

    /** zlib's crc32, by JNA's direct mapping. */
    static final class Zlib {
        static native long crc32(long crc, byte[] buf, int len);
    }

    static final byte[] SMALL = data(256);

    static void jnaLoop() {
        long crc = 0;
        for (int i = 0; i < 1000; i++) {
            crc = Zlib.crc32(crc, SMALL, SMALL.length);
        }
        sink += crc;
    }

    /** The FFM part, compiled apart (JDK 22+): null on an older JDK or without the class. */
    static Runnable critical() throws Exception {
        if (Runtime.version().feature() < 22) {
            System.out.println("SKIPPED critical: JDK " + Runtime.version().feature());
            return null;
        }
        Class<?> c;
        try {
            c = Class.forName("CriticalDeleted");
        } catch (ClassNotFoundException e) {
            System.out.println("SKIPPED critical: CriticalDeleted not compiled (JDK 25's javac)");
            return null;
        }
        return (Runnable) c.getMethod("prepare").invoke(null);
    }

    /** The process's mappings of files in a temporary directory, as MAPPED lines: START PATH. */
    static void printTemporaryMappings() throws Exception {
        String tmp = Paths.get(System.getProperty("java.io.tmpdir")).toRealPath().toString();
        String jna = System.getProperty("jna.tmpdir", "/.cache/JNA/temp");
        List<String> seen = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            int at = line.indexOf('/');
            if (at < 0) {
                continue;
            }
            String path = line.substring(at);
            boolean temporary = path.startsWith(tmp + "/") || path.startsWith("/tmp/")
                    || path.contains(jna);
            if (temporary && !seen.contains(path)) {
                seen.add(path);
                // The lowest mapping (the map is sorted): where the library starts.
                System.out.println("MAPPED " + line.substring(0, line.indexOf('-')) + " " + path);
            }
        }
    }
}
