package pulsard.compat;

import java.lang.annotation.Annotation;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs every @Scenario (or those named after the URLs) in one JVM, LANES at a time (each uses
 * topics and namespaces of its own, and most of its time waits on the broker), each bounded,
 * and prints one line per scenario as it ends: RESULT name PASS|FAIL, followed by detail lines.
 * The transactional programs run theirs one at a time: each scenario's client connects to every
 * coordinator, and side by side they took longer.
 * Usage: Main SERVICE_URL PARTITIONED_SERVICE_URL [scenario ...]
 */
public final class Main {
    static final Class<?>[] SCENARIO_CLASSES = {
        ProduceScenarios.class, SubscriptionScenarios.class, ReaderSeekScenarios.class,
        TopicSchemaScenarios.class, TerminationScenarios.class,
    };
    static final long SCENARIO_TIMEOUT_S = 40;
    static final int LANES = 4;

    public static void main(String[] args) throws Exception {
        runAll(SCENARIO_CLASSES, Scenario.class, LANES, args);
    }

    /** Run the scenarios of these classes carrying this marker, `lanes` at a time; args: two
     *  service URLs, then names. */
    static void runAll(Class<?>[] classes, Class<? extends Annotation> marker, int lanes, String[] args)
            throws Exception {
        Ctx ctx = new Ctx(args[0], args[1]);
        List<String> wanted = List.of(args).subList(2, args.length);
        ExecutorService runner = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "scenario");
            t.setDaemon(true);
            return t;
        });
        ExecutorService side = Executors.newFixedThreadPool(lanes);
        List<Future<?>> reported = new ArrayList<>();
        for (Method method : scenarios(classes, marker)) {
            if (wanted.isEmpty() || wanted.contains(method.getName())) {
                reported.add(side.submit(() -> report(method.getName(), run(runner, ctx, method))));
            }
        }
        for (Future<?> done : reported) {
            done.get();
        }
        side.shutdown();
        ctx.close();
        System.exit(0);
    }

    static List<Method> scenarios(Class<?>[] classes, Class<? extends Annotation> marker) {
        List<Method> out = new ArrayList<>();
        for (Class<?> cls : classes) {
            for (Method m : cls.getDeclaredMethods()) {
                if (m.isAnnotationPresent(marker)) {
                    out.add(m);
                }
            }
        }
        out.sort((a, b) -> a.getName().compareTo(b.getName()));
        return out;
    }

    /** null on success, else the failure text. */
    static String run(ExecutorService runner, Ctx ctx, Method method) {
        Future<?> done = runner.submit(() -> {
            method.invoke(null, ctx);
            return null;
        });
        try {
            done.get(SCENARIO_TIMEOUT_S, TimeUnit.SECONDS);
            return null;
        } catch (TimeoutException e) {
            done.cancel(true);
            return "timed out after " + SCENARIO_TIMEOUT_S + "s";
        } catch (Exception e) {
            Throwable cause = e.getCause() instanceof InvocationTargetException ite ? ite.getCause() : e;
            return describe(cause);
        }
    }

    static String describe(Throwable error) {
        StringBuilder out = new StringBuilder(error.toString());
        for (StackTraceElement frame : error.getStackTrace()) {
            if (frame.getClassName().startsWith("pulsard.")) {
                out.append("\n    at ").append(frame);
            }
        }
        return out.toString();
    }

    static synchronized void report(String name, String failure) {
        System.out.println("RESULT " + name + " " + (failure == null ? "PASS" : "FAIL"));
        if (failure != null) {
            for (String line : failure.split("\n")) {
                System.out.println("DETAIL " + name + " " + line);
            }
        }
        System.out.flush();
    }
}
