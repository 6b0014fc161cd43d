"""Java behaviour the wire and the files depend on, below every other package (it imports none of them).

* :mod:`.lang`: Integer/Long parsing and overflow, String.hashCode, hashCode of boxed keys;
* :mod:`.hashmap`: HashMap / HashSet / ConcurrentHashMap iteration order, and dicts that keep it;
* :mod:`.properties`: java.util.Properties text (config files, UPDATE_*_CONFIG bodies);
* :mod:`.files`: MixAll.string2File and file2String (config files written whole, with a ``.bak``).
"""
