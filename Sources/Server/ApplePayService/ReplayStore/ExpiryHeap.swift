// The memory store's claims that outlive the common retention (Google Pay messages that expire later),
// ordered by expiry so that pruning them is a pop from the top.
import ApplePayDecryption

/// A binary min-heap of claims by expiry (whole seconds).
struct ExpiryHeap {
    private(set) var items: [(key: ReplayKey, expires: Int64)] = []

    var count: Int { items.count }
    var top: (key: ReplayKey, expires: Int64)? { items.first }

    mutating func push(_ key: ReplayKey, expires: Int64) {
        items.append((key, expires))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].expires < items[parent].expires else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popTop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count, items[left].expires < items[smallest].expires { smallest = left }
            if right < items.count, items[right].expires < items[smallest].expires { smallest = right }
            guard smallest != parent else { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
