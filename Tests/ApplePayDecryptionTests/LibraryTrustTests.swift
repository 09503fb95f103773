// Code loaded into the process that holds the merchant keys: crypto_mb, its runtime and PKCS#11
// modules only from paths nobody else can change; a module's answers bounded; the PIN file's mode
// (issue 35, items 6, 7 and 13). Real libraries, compiled here by cc.
import ApplePayDecryption
import Foundation
import Testing

@Suite("Libraries loaded into the process", .serialized)
struct LibraryTrustTests {
    /// A private folder (0755) with a library whose constructor leaves `marker` when it is loaded.
    static func markingLibrary(_ dir: ScratchDirectory, folder: String, name: String, mode: mode_t = 0o755)
        throws -> (library: String, marker: String)
    {
        let folderURL = dir.url.appendingPathComponent(folder)
        try FileManager.default.createDirectory(at: folderURL, withIntermediateDirectories: true)
        let library = folderURL.appendingPathComponent(name).path
        let marker = dir.url.appendingPathComponent("loaded-\(folder)-\(name)").path
        try CLibrary.marking(marker, at: library)
        chmod(library, mode)
        return (library, marker)
    }

    static func multibufferOn(_ environment: [String: String], directory: URL? = nil) throws -> ProcessResult {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("mb-\(UUID().uuidString).jsonl").path
        defer { unlink(out) }
        return try runCLI(
            ["batch", BatchFixture.archive, "--out", out, "--multibuffer", "on"] + BatchFixture.options,
            environment: environment, directory: directory)
    }

    @Test(
        "APPLEPAY_CRYPTO_MB: relative, writable by others, in a folder others can write, or with a foreign runtime beside it is never loaded (item 6)"
    )
    func cryptoMBPathIsChecked() throws {
        let dir = ScratchDirectory()
        // Relative: the working directory's library.
        let (_, cwdMarker) = try Self.markingLibrary(dir, folder: "cwd", name: "libcrypto_mb.so.13")
        let relative = try Self.multibufferOn(
            ["APPLEPAY_CRYPTO_MB": "./libcrypto_mb.so.13"], directory: dir.url.appendingPathComponent("cwd"))
        #expect(relative.status == 2, "\(relative.stderr)")
        #expect(relative.stderr.contains("not an absolute path"), "\(relative.stderr)")
        #expect(!FileManager.default.fileExists(atPath: cwdMarker), "a relative APPLEPAY_CRYPTO_MB was loaded")

        // A library anyone may rewrite.
        let (open, openMarker) = try Self.markingLibrary(
            dir, folder: "open-file", name: "libcrypto_mb.so.13", mode: 0o666)
        let openFile = try Self.multibufferOn(["APPLEPAY_CRYPTO_MB": open])
        #expect(openFile.status == 2, "\(openFile.stderr)")
        #expect(openFile.stderr.contains("writable by other users"), "\(openFile.stderr)")
        #expect(!FileManager.default.fileExists(atPath: openMarker))

        // A folder anyone may write (no sticky bit): the library can be swapped.
        let (inOpenFolder, folderMarker) = try Self.markingLibrary(
            dir, folder: "open-folder", name: "libcrypto_mb.so.13")
        chmod(dir.url.appendingPathComponent("open-folder").path, 0o777)
        let openFolder = try Self.multibufferOn(["APPLEPAY_CRYPTO_MB": inOpenFolder])
        #expect(openFolder.status == 2, "\(openFolder.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folderMarker))

        // A stand-in runtime library beside crypto_mb, writable by anyone: loaded first, so refused.
        let (beside, _) = try Self.markingLibrary(dir, folder: "runtime", name: "libcrypto_mb.so.13")
        let (_, runtimeMarker) = try Self.markingLibrary(dir, folder: "runtime", name: "libintlc.so.5", mode: 0o666)
        let runtime = try Self.multibufferOn(["APPLEPAY_CRYPTO_MB": beside])
        #expect(runtime.status == 2, "\(runtime.stderr)")
        #expect(!FileManager.default.fileExists(atPath: runtimeMarker), "a foreign runtime library was loaded")
    }

    @Test(
        "crypto_mb in a sticky folder others can write is never loaded: others could add a runtime library's name there"
    )
    func stickyOpenFolderIsRefused() throws {
        let dir = ScratchDirectory()
        let (library, marker) = try Self.markingLibrary(dir, folder: "sticky", name: "libcrypto_mb.so.13")
        chmod(dir.url.appendingPathComponent("sticky").path, 0o1777)
        let result = try Self.multibufferOn(["APPLEPAY_CRYPTO_MB": library])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("writable by other users"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker), "crypto_mb was loaded from a folder others can write")
    }

    @Test(
        "multibuffer auto with an empty LD_LIBRARY_PATH entry does not load a crypto_mb from the working directory (item 6)"
    )
    func autoIgnoresTheWorkingDirectory() throws {
        let dir = ScratchDirectory()
        let (_, marker) = try Self.markingLibrary(dir, folder: "cwd", name: "libcrypto_mb.so.13")
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let result = try runCLI(
            ["batch", BatchFixture.archive, "--out", out, "--multibuffer", "auto"] + BatchFixture.options,
            environment: ["APPLEPAY_CRYPTO_MB": "", "LD_LIBRARY_PATH": ":/nonexistent"],
            directory: dir.url.appendingPathComponent("cwd"))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker), "auto loaded ./libcrypto_mb.so.13")
    }

    /// A PKCS#11 module with one token and one object, whose C_GetAttributeValue says every value is
    /// 2^62 bytes long.
    static let hugeAttributeModule = """
        #include "pkcs11.h"
        static CK_RV ok_init(void *a) { (void)a; return 0; }
        static CK_RV slots(CK_BBOOL present, CK_SLOT_ID *list, CK_ULONG *count) {
            (void)present; if (list) list[0] = 1; *count = 1; return 0;
        }
        static CK_RV token(CK_SLOT_ID slot, CK_TOKEN_INFO *info) {
            (void)slot; memset(info, ' ', sizeof *info); memcpy(info->label, "huge", 4); info->flags = 0; return 0;
        }
        static CK_RV open_session(CK_SLOT_ID s, CK_FLAGS f, void *a, void *n, CK_SESSION_HANDLE *h) {
            (void)s; (void)f; (void)a; (void)n; *h = 7; return 0;
        }
        static CK_RV close_session(CK_SESSION_HANDLE h) { (void)h; return 0; }
        static CK_RV close_all(CK_SLOT_ID s) { (void)s; return 0; }
        static CK_RV session_info(CK_SESSION_HANDLE h, CK_SESSION_INFO *i) { (void)h; memset(i, 0, sizeof *i); return 0; }
        static CK_RV login(CK_SESSION_HANDLE h, CK_ULONG u, CK_BYTE *p, CK_ULONG l) { (void)h; (void)u; (void)p; (void)l; return 0; }
        static int found;
        static CK_RV find_init(CK_SESSION_HANDLE h, CK_ATTRIBUTE *t, CK_ULONG n) { (void)h; (void)t; (void)n; found = 0; return 0; }
        static CK_RV find(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE *o, CK_ULONG max, CK_ULONG *n) {
            (void)h; if (!found && max > 0) { o[0] = 42; *n = 1; found = 1; } else *n = 0; return 0;
        }
        static CK_RV find_final(CK_SESSION_HANDLE h) { (void)h; return 0; }
        static CK_RV attribute(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE o, CK_ATTRIBUTE *t, CK_ULONG n) {
            (void)h; (void)o;
            for (CK_ULONG i = 0; i < n; i++) if (t[i].pValue == NULL) t[i].ulValueLen = 1UL << 62;
            return 0;
        }
        static CShims_CK_FUNCTION_LIST list;
        CK_RV C_GetFunctionList(void **out) {
            list.version.major = 2; list.version.minor = 40;
            list.C_Initialize = ok_init; list.C_GetSlotList = slots; list.C_GetTokenInfo = token;
            list.C_OpenSession = open_session; list.C_CloseSession = close_session; list.C_CloseAllSessions = close_all;
            list.C_GetSessionInfo = session_info; list.C_Login = login; list.C_FindObjectsInit = find_init;
            list.C_FindObjects = find; list.C_FindObjectsFinal = find_final; list.C_GetAttributeValue = attribute;
            *out = &list;
            return 0;
        }
        """

    @Test("a PKCS#11 module that says an attribute is 2^62 bytes long is a configuration error, not an abort (item 7)")
    func hugeAttributeLengthIsRefused() throws {
        let dir = ScratchDirectory()
        let module = dir.url.appendingPathComponent("libhuge.so").path
        try CLibrary.build(Self.hugeAttributeModule, at: module)
        let cert = dir.write("m.pem", Fixtures.shared.ecMerchant.certificatePEM)
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let spec = "cert=\(cert),pkcs11=pkcs11:token=huge;object=k?module-path=\(module)"
        let result = try runCLI(
            ["batch", BatchFixture.archive, "--out", out, "--merchant", spec] + Array(BatchFixture.options.dropFirst(4))
        )
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("bound"), "\(result.stderr)")
    }

    @Test("module-path= gets crypto_mb's rule: a module in a folder others can write is never loaded (item 13)")
    func modulePathIsChecked() throws {
        let dir = ScratchDirectory()
        let (module, marker) = try Self.markingLibrary(dir, folder: "open", name: "libmodule.so")
        chmod(dir.url.appendingPathComponent("open").path, 0o777)
        let reference = try PKCS11KeyReference(uri: "pkcs11:object=k?module-path=\(module)")
        #expect {
            try MerchantIdentity(certificate: Fixtures.shared.ecMerchant.certificateDER, pkcs11: reference)
        } throws: { error in
            "\(error)".contains("writable by other users")
        }
        #expect(!FileManager.default.fileExists(atPath: marker), "the module was loaded")
    }

    @Test("a PIN file that others can read is reported; one only its owner reads is not (item 13)")
    func readablePINFileIsReported() throws {
        let hsm = try SoftHSMToken.require()
        let dir = ScratchDirectory()
        let pin = dir.write("pin", SoftHSMToken.pin + "\n")
        chmod(pin, 0o644)
        let open = try hsm.identity(hsm.ecMerchant, object: "ec-key", query: "pin-source=file:\(pin)")
        #expect(open.pinFileWarning?.contains("chmod 600") == true, "\(open.pinFileWarning ?? "nil")")
        chmod(pin, 0o600)
        #expect(open.pinFileWarning == nil)
    }
}
