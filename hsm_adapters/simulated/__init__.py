"""The simulated tape library: drive profiles, tape physics, catalogues and the discrete-event engine."""
