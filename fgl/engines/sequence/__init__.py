"""The exact sequence engines: pattern-sparse chains (Ye et al. 2009 §3) and
high-order semi-Markov segments (Cuong et al. 2014 §2), over one span state machine."""
