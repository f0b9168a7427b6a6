package pulsard.compat;

/**
 * Runs the @PendingAckScenario scenarios in one JVM.
 * Usage: PendingAckMain SERVICE_URL_WITH_TRANSACTIONS SERVICE_URL [scenario ...]
 */
public final class PendingAckMain {
    private PendingAckMain() {}

    public static void main(String[] args) throws Exception {
        Main.runAll(new Class<?>[] {PendingAckScenarios.class}, PendingAckScenario.class, 1, args);
    }
}
