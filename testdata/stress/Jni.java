/** The JNI library of the stress and parity programs (libstress.so, from stress.c). */
final class Jni {
    static {
        System.loadLibrary("stress");
    }

    private Jni() {}

    /**
     * {@code rounds} times: dlopen one of {@code paths} (in turn), call its {@code churn_work},
     * dlclose it. Returns the number of calls; throws RuntimeException with dlerror().
     */
    static native long dlchurn(String[] paths, int rounds);

    /** Calls {@link #recurse} with depth + 1 from native code. */
    static native void nativeRecurse(int depth);

    static void recurse(int depth) {
        nativeRecurse(depth + 1);
    }

    /**
     * Java -> native -> Java -> ... until the stack overflows; returns the StackOverflowError,
     * caught in Java after it unwound every native frame. Throws AssertionError if the recursion
     * ended otherwise or the error's trace shows no native frame of ours.
     */
    static StackOverflowError overflow() {
        try {
            recurse(0);
        } catch (StackOverflowError e) {
            for (StackTraceElement f : e.getStackTrace()) {
                String m = f.getMethodName();
                if (m.equals("nativeRecurse") || m.equals("recurse")) {
                    return e;
                }
            }
            throw new AssertionError("a StackOverflowError outside the JNI recursion", e);
        }
        throw new AssertionError("the JNI recursion returned without a StackOverflowError");
    }
}
