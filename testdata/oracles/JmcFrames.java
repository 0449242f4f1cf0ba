import java.io.File;
import java.util.Map;
import java.util.TreeMap;

import org.openjdk.jmc.common.IMCFrame;
import org.openjdk.jmc.common.IMCMethod;
import org.openjdk.jmc.common.IMCStackTrace;
import org.openjdk.jmc.common.IMCThread;
import org.openjdk.jmc.common.IMCType;
import org.openjdk.jmc.common.item.IItem;
import org.openjdk.jmc.common.item.IItemCollection;
import org.openjdk.jmc.common.item.IItemIterable;
import org.openjdk.jmc.common.item.IMemberAccessor;
import org.openjdk.jmc.common.item.IType;
import org.openjdk.jmc.flightrecorder.IParserStats;
import org.openjdk.jmc.flightrecorder.JfrAttributes;
import org.openjdk.jmc.flightrecorder.JfrLoaderToolkit;

/**
 * Reads a JFR file with JDK Mission Control's own parser (its public API) and prints what JMC
 * makes of the CPU-time samples: every event type whose identifier starts with
 * {@code jdk.CPUTimeSample} with its event count ({@code TYPE id n}; a random suffix means JMC
 * split the type), the frame types JMC gives their frames ({@code FRAMETYPE type n}), the
 * class and method JMC shows for the frames of type NATIVE
 * ({@code NATIVEFRAME<tab>class<tab>method<tab>n}), and the parser's chunk and skipped-event
 * counts ({@code CHUNKS n}, {@code SKIPPED n}). Exit status 1 with an {@code ERROR} line when
 * JMC cannot load the file. With {@code --stacks THREAD}, also every sample of the thread of
 * that name with its frames in JMC's order (leaf first), one line each:
 * {@code STACK<tab>frame<tab>frame...}, a frame as {@code TYPE|modifiers|descriptor|class|method};
 * the file is then loaded with hidden frames (lambda forms, the Java side of FFM stubs), which
 * JMC leaves out by default, so that every count includes them.
 *
 * <p>Usage: {@code java -cp $JMC_CP JmcFrames.java [--stacks THREAD] FILE} (JMC_CP: see
 * ../shared/oracles).
 */
public class JmcFrames {
    private static final String EVENT = "jdk.CPUTimeSample";

    /** A frame of a {@code STACK} line. */
    private static String frame(IMCFrame frame) {
        IMCMethod method = frame.getMethod();
        if (method == null) {
            return frame.getType() + "|?|?|?|?";
        }
        IMCType owner = method.getType();
        return frame.getType() + "|" + method.getModifier() + "|" + method.getFormalDescriptor()
                + "|" + (owner == null ? "null" : owner.getFullName()) + "|"
                + method.getMethodName();
    }

    /**
     * The events with every frame. JMC releases after 9.1 leave hidden frames out unless
     * {@code loadEvents(File, true)} asks for them (its views do); 9.1.x has no such filter and
     * no such overload, and keeps them all.
     */
    static IItemCollection loadWithHiddenFrames(File file) throws Exception {
        try {
            java.lang.reflect.Method m =
                    JfrLoaderToolkit.class.getMethod("loadEvents", File.class, boolean.class);
            return (IItemCollection) m.invoke(null, file, true);
        } catch (NoSuchMethodException e) {
            return JfrLoaderToolkit.loadEvents(file);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
    }

    public static void main(String[] args) {
        String stacksOf = null;
        String path = args[args.length - 1];
        if (args.length == 3 && args[0].equals("--stacks")) {
            stacksOf = args[1];
        }
        IItemCollection all;
        try {
            all = stacksOf == null ? JfrLoaderToolkit.loadEvents(new File(path))
                    : loadWithHiddenFrames(new File(path));
        } catch (Exception e) {
            System.out.println("ERROR " + e);
            System.exit(1);
            return;
        }
        Map<String, Long> types = new TreeMap<>();
        Map<String, Long> frameTypes = new TreeMap<>();
        Map<String, Long> nativeFrames = new TreeMap<>();
        for (IItemIterable items : all) {
            IType<IItem> type = items.getType();
            if (!type.getIdentifier().startsWith(EVENT)) {
                continue;
            }
            IMemberAccessor<IMCStackTrace, IItem> stack =
                    JfrAttributes.EVENT_STACKTRACE.getAccessor(type);
            IMemberAccessor<IMCThread, IItem> thread =
                    JfrAttributes.EVENT_THREAD.getAccessor(type);
            for (IItem item : items) {
                types.merge(type.getIdentifier(), 1L, Long::sum);
                IMCStackTrace trace = stack == null ? null : stack.getMember(item);
                IMCThread t = thread == null ? null : thread.getMember(item);
                if (stacksOf != null && t != null && stacksOf.equals(t.getThreadName())) {
                    StringBuilder line = new StringBuilder("STACK");
                    if (trace != null && trace.getFrames() != null) {
                        for (IMCFrame frame : trace.getFrames()) {
                            line.append('\t').append(frame(frame));
                        }
                    }
                    System.out.println(line);
                }
                if (trace == null || trace.getFrames() == null) {
                    continue;
                }
                for (IMCFrame frame : trace.getFrames()) {
                    frameTypes.merge(String.valueOf(frame.getType()), 1L, Long::sum);
                    if (frame.getType() == IMCFrame.Type.NATIVE && frame.getMethod() != null) {
                        IMCType owner = frame.getMethod().getType();
                        String name = owner == null ? "null" : owner.getFullName();
                        nativeFrames.merge(name + "\t" + frame.getMethod().getMethodName(), 1L,
                                Long::sum);
                    }
                }
            }
        }
        types.forEach((id, n) -> System.out.println("TYPE " + id + " " + n));
        frameTypes.forEach((t, n) -> System.out.println("FRAMETYPE " + t + " " + n));
        nativeFrames.forEach((f, n) -> System.out.println("NATIVEFRAME\t" + f + "\t" + n));
        if (all instanceof IParserStats stats) {
            System.out.println("CHUNKS " + stats.getChunkCount());
            System.out.println("SKIPPED " + stats.getSkippedEventCount());
        }
    }
}
