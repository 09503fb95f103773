// Why a replay claim could not be judged: the request fails closed with 503.
/// Why a claim could not be judged; the request fails closed with 503.
struct ReplayStoreUnavailable: Error, CustomStringConvertible {
    let description: String
}
