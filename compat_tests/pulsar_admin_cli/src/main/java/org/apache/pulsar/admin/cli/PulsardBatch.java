package org.apache.pulsar.admin.cli;

import java.io.FileInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;

/**
 * Runs pulsar-admin's own PulsarAdminTool once per line of a command file (arguments separated
 * by tabs) in one JVM, so a test can drive dozens of commands without a JVM start each. One tool
 * serves every line, as one pulsar-admin shell does: its admin client is built once (a tool per
 * line cost 0.16 s a command, 4 times as much). Each command's output is framed by "@@@ BEGIN n" and "@@@ END n true|false" (run's own result).
 * It lives in PulsarAdminTool's package because run(String[]) is protected there.
 */
public final class PulsardBatch {
    public static void main(String[] args) throws Exception {
        Properties properties = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {
            properties.load(in);
        }
        PulsarAdminTool.setAllowSystemExit(false);
        List<String> lines = Files.readAllLines(Path.of(args[1]));
        PulsarAdminTool tool = new PulsarAdminTool(properties);
        for (int n = 0; n < lines.size(); n++) {
            System.out.println("@@@ BEGIN " + n);
            System.out.flush();
            boolean ok;
            try {
                ok = tool.run(lines.get(n).split("\t"));
            } catch (Exception e) {
                System.out.println("exception: " + e);
                ok = false;
            }
            System.out.flush();
            System.err.flush();
            System.out.println("@@@ END " + n + " " + ok);
            System.out.flush();
        }
        System.exit(0);
    }
}
