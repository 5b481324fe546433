import CJACK

extension JACKClient {
    /// The JACK transport as this client sees it: rolling or not, and its
    /// frame; nil while no server is connected. Any thread
    /// (`jack_transport_query` is real-time safe and takes no lock).
    public func transportState() -> (rolling: Bool, frame: UInt32)? {
        guard let client else { return nil }
        var position = jack_position_t()
        let state = jack_transport_query(client, &position)
        return (state == JackTransportRolling, position.frame)
    }
}
