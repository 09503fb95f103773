// The service's request context: Hummingbird's core context plus the request's facts.
import Hummingbird

struct ServiceRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let facts = RequestFacts()
    init(source: ApplicationRequestContextSource) { coreContext = .init(source: source) }
}
