// GET /healthz, /readyz, /metrics and /openapi.yaml: what an orchestrator, a scraper and a client's
// generator read. Never behind the API key (probes carry none).
import ApplePayDecryption
import Hummingbird
import NIOCore

struct OperationsController: Sendable {
    let keys: KeyRing
    let store: any ReplayStore
    let metrics: ServiceMetrics

    /// /healthz, /readyz and /metrics: on --listen, or on --operations-listen alone.
    func addProbeRoutes(to router: Router<ServiceRequestContext>) {
        router.get("/healthz") { _, _ in JSONResponse.make(.ok, #"{"status":"alive"}"#) }
        router.get("/readyz") { _, _ in await ready() }
        router.get("/metrics") { _, _ in scrape() }
    }

    /// /openapi.yaml, always on --listen where the clients are.
    func addContractRoute(to router: Router<ServiceRequestContext>) {
        router.get("/openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml"],
                body: .init(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_yaml)))
        }
    }

    func scrape() -> Response {
        metrics.updateExpiry(keys.keys)
        if let memory = store as? MemoryReplayStore { metrics.claimsHeld.set(Double(memory.count)) }
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: metrics.emit())))
    }

    func ready() async -> Response {
        let reachable = await store.ping()
        let merchants = keys.keys.merchants
        // Keys in a PKCS#11 token: one session opened and closed per key, off the event loop (a
        // module call blocks). Software keys have no problem to report.
        let tokenProblems =
            merchants.contains(where: \.keyIsInToken)
            ? await Task.detached { merchants.compactMap { m in m.keyProblem().map { "\(m.label): \($0)" } } }.value
            : []
        let ready = reachable && tokenProblems.isEmpty
        let problems = tokenProblems.map { JSONValue.string($0).description }.joined(separator: ",")
        let body =
            "{\"ready\":\(ready),\"merchantKeys\":\(merchants.count),\"replayStore\":\(JSONValue.string(store.kind)),\"replayStoreReachable\":\(reachable),\"tokenKeyProblems\":[\(problems)]}"
        return JSONResponse.make(ready ? .ok : .serviceUnavailable, body)
    }
}
