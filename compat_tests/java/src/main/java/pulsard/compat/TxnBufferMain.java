package pulsard.compat;

/**
 * Runs the @TxnBufferScenario scenarios in one JVM.
 * Usage: TxnBufferMain SERVICE_URL_WITH_TRANSACTIONS SERVICE_URL [scenario ...]
 */
public final class TxnBufferMain {
    private TxnBufferMain() {}

    public static void main(String[] args) throws Exception {
        Main.runAll(new Class<?>[] {TxnBufferScenarios.class}, TxnBufferScenario.class, 1, args);
    }
}
