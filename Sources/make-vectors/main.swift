print("tbd")
