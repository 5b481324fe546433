import SpinetEffects

/// The owned, noncopyable buffer the effects use (see SpinetEffects), for
/// the units built on the engine: they own their render buffers the same
/// way without importing the effects.
public typealias FixedBuffer<Element> = SpinetEffects.FixedBuffer<Element>
