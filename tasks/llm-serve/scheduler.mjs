// Admission and scheduling (editable): which waiting request a free sequence takes next, and
// whether a new request is let in at all. A request refused here is a miss for the bench, like
// one that broke its SLO; refusing is worth it only when it saves more requests than it loses.
//
// A request is {id, promptTokens, maxTokens, arrived} (arrived: ms on the server's clock).

/// Whether to let `request` wait in `queue` (the requests not yet on a sequence).
export function admit(request, queue, config) {
    return config.max_queue === 0 || queue.length < config.max_queue;
}

/// The index in `queue` (never empty) of the request the next free sequence serves.
export function pick(queue, config) {
    if (config.order === "shortest-prompt") {
        let best = 0;
        for (let i = 1; i < queue.length; i++) {
            if (queue[i].promptTokens < queue[best].promptTokens) best = i;
        }
        return best;
    }
    return 0;
}
