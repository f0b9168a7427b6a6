package pulsard.compat;

/**
 * Runs the @CoordinatorScenario scenarios in one JVM.
 * Usage: CoordinatorMain SERVICE_URL_WITH_TRANSACTIONS SERVICE_URL_WITHOUT [scenario ...]
 */
public final class CoordinatorMain {
    private CoordinatorMain() {}

    public static void main(String[] args) throws Exception {
        Main.runAll(new Class<?>[] {CoordinatorScenarios.class}, CoordinatorScenario.class, 1, args);
    }
}
