package pulsard.compat;

/**
 * Runs the @ConnectorScenario replays of the Spark connector's client calls in one JVM.
 * Usage: ConnectorMain SERVICE_URL PARTITIONED_SERVICE_URL [scenario ...]
 */
public final class ConnectorMain {
    static final Class<?>[] SCENARIO_CLASSES = {
        ConnectorSourceScenarios.class, ConnectorStreamScenarios.class, ConnectorTopicSchemaScenarios.class,
    };

    private ConnectorMain() {}

    public static void main(String[] args) throws Exception {
        Main.runAll(SCENARIO_CLASSES, ConnectorScenario.class, Main.LANES, args);
    }
}
