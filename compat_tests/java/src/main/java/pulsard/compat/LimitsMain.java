package pulsard.compat;

/**
 * Runs the @LimitScenario scenarios (topic limits set through the admin REST API) in one JVM.
 * Usage: LimitsMain SERVICE_URL SERVICE_URL [scenario ...]; PULSAR_WEB_URL names the web port.
 */
public final class LimitsMain {
    private LimitsMain() {}

    public static void main(String[] args) throws Exception {
        Main.runAll(new Class<?>[] {LimitScenarios.class}, LimitScenario.class, Main.LANES, args);
    }
}
