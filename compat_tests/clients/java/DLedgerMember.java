// A stand-alone member of a DLedger group on the official openmessaging/dledger 0.3.1.2 library (the one
// RocketMQ 4.9.8 ships), driven over stdin by compat_tests/test_dledger_java.py:
//   args: GROUP SELF_ID PEERS STORE_DIR DATA_FILE_SIZE
//   stdin "append TEXT" -> "APPEND <code> <index> <pos>"; "state" -> "STATE <role> <term> <leader> <end> <committed>";
//   "quit" -> shuts the server down.
import io.openmessaging.storage.dledger.DLedgerConfig;
import io.openmessaging.storage.dledger.DLedgerServer;
import io.openmessaging.storage.dledger.MemberState;
import io.openmessaging.storage.dledger.protocol.AppendEntryRequest;
import io.openmessaging.storage.dledger.protocol.AppendEntryResponse;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

public class DLedgerMember {
    public static void main(String[] args) throws Exception {
        DLedgerConfig config = new DLedgerConfig();
        config.setGroup(args[0]);
        config.setSelfId(args[1]);
        config.setPeers(args[2]);
        config.setStoreBaseDir(args[3]);
        config.setMappedFileSizeForEntryData(Integer.parseInt(args[4]));
        DLedgerServer server = new DLedgerServer(config);
        server.startup();
        System.out.println("READY " + server.getListenAddress());
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("append ")) {
                AppendEntryRequest request = new AppendEntryRequest();
                request.setGroup(args[0]);
                request.setRemoteId(args[1]);
                request.setBody(line.substring(7).getBytes(StandardCharsets.UTF_8));
                try {
                    AppendEntryResponse r = server.handleAppend(request).get(5, TimeUnit.SECONDS);
                    System.out.println("APPEND " + r.getCode() + " " + r.getIndex() + " " + r.getPos());
                } catch (Exception e) {
                    System.out.println("APPEND -1 -1 -1 " + e);
                }
            } else if (line.equals("state")) {
                MemberState s = server.getMemberState();
                System.out.println("STATE " + s.getRole() + " " + s.currTerm() + " " + s.getLeaderId() + " "
                    + server.getdLedgerStore().getLedgerEndIndex() + " " + server.getdLedgerStore().getCommittedIndex());
            } else if (line.equals("quit")) {
                break;
            }
            System.out.flush();
        }
        server.shutdown();
        System.exit(0);
    }
}
